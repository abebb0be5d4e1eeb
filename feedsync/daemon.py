"""``feedsync daemon``: the service that runs for months on a Raspberry Pi.

APScheduler 3 runs the jobs, all on ONE worker thread, so they never overlap and never
share the database connection:

- ``poll`` (every ``[daemon] tick``): the feeds whose next poll time has come, then the
  extraction queue (new rows and failed rows due for a retry): the same pass as
  ``feedsync run --due``. Each feed's next poll time is in the database
  (``decide.next_poll_at``), so a restart keeps the schedule.
- ``snapshot`` (every ``[storage] save_interval``): the live database to the card,
  skipped when nothing changed.
- ``retention`` (daily, and soon after start): prune old articles, then old tombstones.
- ``heartbeat`` (when systemd has a watchdog): feeds the watchdog and refreshes STATUS.
  It runs on the same worker thread, so a job that hangs starves it and systemd restarts
  the daemon; a long job that makes progress feeds the watchdog itself.

Every job has ``max_instances=1`` and ``coalesce=True``; a job that raises is logged and
runs again at its next tick, it never ends the daemon.

The wall clock may jump (a Pi has no real-time clock: NTP sets it after boot, from 1970
or from its last shutdown; a wrong RTC or NTP answer, and back). APScheduler 3 schedules
on the wall clock: its IntervalTrigger, after a jump ahead, walked every missed tick one
by one (a list of them, in memory: a step from 1970 to now at a one-second tick never
ended, and grew by ~100 MB every few seconds), and after a step back waited for the
wall clock to come back to the next run time (hours of nothing; the watchdog starved).
So the jobs run on :class:`Every`, which resumes from now after a jump ahead (one run,
no burst), and the main thread brings back to now any job whose next run lies further
ahead than its period (:meth:`Daemon._keep_schedule`): after a step back it runs at
once and keeps its pace from there.

Signals only set flags; the main thread acts on them. SIGTERM / SIGINT: STOPPING=1, the
pass in progress stops taking new work (its open transaction finishes, its leased rows
are given back), the scheduler shuts down, a final snapshot is written, exit 0. SIGHUP:
the config file is read again (feeds added or disabled, settings changed); the schedule
lives in the database and is untouched.

A database server that cannot be reached (PostgreSQL down, a wrong password, the network)
does not end the daemon: it says so in one line in the log and in its systemd STATUS, and
tries again with a doubling backoff (up to a minute), at start and at every tick.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import socket
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger

from feedsync import clock, logs, timestamps
from feedsync import config as config_module
from feedsync.config import Config, ConfigError
from feedsync.notify import Notifier
from feedsync.pass_plan import PassPlan, PassRuntime
from feedsync.pipeline import Pass, has_work, load_pass_modules
from feedsync.progress import ROOM_PROBLEMS, LogProgress
from feedsync.records import RunStats
from feedsync.storage import (
    CardReadOnly,
    Keep,
    Storage,
    StorageDamaged,
    StorageError,
    StorageFull,
    StorageUnavailable,
    open_storage,
)
from feedsync.terminal import plural, short_time

log = logs.LOGGER
RETENTION_EVERY = timedelta(days=1)
RETENTION_FIRST = timedelta(minutes=5)  # after start: let the first polls go first
RECONNECT_FIRST_S = 1.0  # the wait before trying an unreachable database again, doubling
RECONNECT_MAX_S = 60.0
# The main thread looks at the schedule this often (and at every signal).
LOOK_EVERY_S = 5.0
# A change of the wall clock against the monotonic one beyond this is a jump (logged).
JUMP_S = 2.0


class Every(BaseTrigger):  # type: ignore[misc]  # (APScheduler 3 has no type hints)
    """Every ``period``, on a wall clock that may jump (a trigger of APScheduler's public
    API: ``get_next_fire_time``). The next run is a period after the last, unless that is
    a period or more behind now (the clock jumped ahead, or the job could not run for that
    long): then now, once. APScheduler's IntervalTrigger stepped through each missed
    period instead: millions of them for a clock set from 1970 to now."""

    def __init__(self, period: timedelta):
        self.period = max(period, timedelta(seconds=1))

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        if previous_fire_time is None:
            return now + self.period
        following = previous_fire_time + self.period
        return now if following <= now - self.period else following

    def __str__(self) -> str:
        return f"every {self.period}"


class Daemon:
    def __init__(
        self,
        config: Config,
        config_file: str | None,
        notifier: Notifier | None = None,
        debug: bool = False,
    ):
        self.config = config
        self.debug = debug  # log at debug level: each failed article, each quiet pass
        self.config_file = config_file
        self.notifier = notifier or Notifier()
        self.storage: Storage | None = None
        self._stop = threading.Event()  # asks the pass in progress to stop
        self._wake = threading.Event()  # wakes the main thread: a signal arrived
        self._reload = False
        self._scheduler: BackgroundScheduler | None = None
        self._rng = random.Random()
        self._started_at = timestamps.to_iso(timestamps.now())
        self._room: set[str] = set()  # room problems logged once while they last
        self._read_only = False  # the card is read-only, and the log said so once
        self._metrics_failing = False  # the metrics file cannot be written, said once
        self._broken: str | None = None  # the database could not be opened again: why
        self._clock_believed = True  # what the log last said of the clock
        self._clock_offset = time.time() - time.monotonic()  # wall against monotonic
        self._clock: clock.Verdict | None = None  # the last judgement of it

    # ------------------------------------------------------------ lifecycle

    def run(self) -> int:
        where = logs.setup(logging.DEBUG if self.debug else logging.INFO)
        unused = config_module.proxy_warning()
        if unused is not None:
            log.warning("%s", unused)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_stop_signal)
        signal.signal(signal.SIGHUP, self._on_reload_signal)

        urls = config_module.config_feeds(self.config)
        self.storage = self._open_when_reachable()
        if self.storage is None:  # stopped while waiting for the database
            self.notifier.close()
            return 0
        try:
            self.storage.sync_config_feeds(urls, timestamps.to_iso(timestamps.now()))
            self._beat()
            read_only = self.storage.status().card_read_only
            if read_only is not None:
                self._card_read_only(read_only)
            load_pass_modules()  # a broken install stops here, not at every pass
            scheduler = self._start_scheduler()
            log.info(
                "feedsync daemon started: database %s, logging to %s, watchdog %s",
                self.storage.location,
                where,
                self.notifier.watchdog or "off",
            )
            self.notifier.ready(self._status_line())
            while not self._stop.is_set():
                self._wake.wait(timeout=LOOK_EVERY_S)
                self._wake.clear()
                self._keep_schedule(scheduler)
                if self._reload and not self._stop.is_set():
                    self._reload = False
                    self._reload_config()
            self.notifier.stopping("stopping: finishing the work in progress")
            log.info("stopping: finishing the work in progress")
            scheduler.shutdown(wait=True)
            if self._broken is not None:
                return 3  # said when it broke; systemd starts the service again
            return self._final_save()
        finally:
            with contextlib.suppress(StorageError):
                self.storage.close()
            self.notifier.close()

    def _open_when_reachable(self) -> Storage | None:
        """The database, once its server answers; None when stopped meanwhile. Until then
        systemd hears READY with a STATUS saying what is wrong (the service is up and
        retrying, not failed), and the watchdog is fed."""
        delay = RECONNECT_FIRST_S
        while True:
            try:
                return open_storage(self.config.storage, notice=log.info, keep=Keep.of(self.config))
            except StorageUnavailable as exc:
                log.warning("%s; trying again in %.0fs", exc, delay)
                self.notifier.ready(f"waiting for the database: {exc}")
                self.notifier.alive()
            if self._stop.wait(delay):
                return None
            delay = min(delay * 2, RECONNECT_MAX_S)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()
        self._wake.set()

    def _on_reload_signal(self, signum: int, frame: FrameType | None) -> None:
        self._reload = True
        self._wake.set()

    def _start_scheduler(self) -> BackgroundScheduler:
        scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone="UTC",
        )
        now = timestamps.now()
        scheduler.add_job(
            self.poll_job, self._every(self.config.daemon.tick), id="poll", next_run_time=now
        )
        scheduler.add_job(
            # its id stays "snapshot": "job snapshot failed" is a line users' log
            # filters already match, as `status` keeps the word for scripts
            self.save_job,
            self._every(self.config.storage.save_interval),
            id="snapshot",
        )
        scheduler.add_job(
            self.retention_job,
            self._every(RETENTION_EVERY),
            id="retention",
            next_run_time=now + RETENTION_FIRST,
        )
        if self.notifier.watchdog is not None:
            beat = max(self.notifier.watchdog / 4, timedelta(seconds=1))
            scheduler.add_job(
                self.heartbeat_job, self._every(beat), id="heartbeat", next_run_time=now
            )
        scheduler.add_listener(self._job_failed, EVENT_JOB_ERROR)
        scheduler.start()
        self._scheduler = scheduler
        return scheduler

    @staticmethod
    def _every(period: timedelta) -> Every:
        return Every(period)

    def _keep_schedule(self, scheduler: BackgroundScheduler) -> None:
        """On the main thread, every few seconds: a job whose next run lies further ahead
        than its period (and a second) was scheduled by a wall clock that has stepped back
        since: it runs now (APScheduler, on the wall clock, would wait for the clock to
        come back there: hours of no polls, no heartbeat, no watchdog). A jump either way
        is logged, measured against the monotonic clock."""
        offset = time.time() - time.monotonic()
        jumped = offset - self._clock_offset
        self._clock_offset = offset
        if abs(jumped) > JUMP_S:
            log.info(
                "the clock %s by %s: the jobs keep their pace",
                "jumped ahead" if jumped > 0 else "stepped back",
                timedelta(seconds=round(abs(jumped))),
            )
        now = datetime.now(UTC)
        for job in scheduler.get_jobs():
            period = getattr(job.trigger, "period", None)
            if period is None or job.next_run_time is None:
                continue
            if job.next_run_time > now + period + timedelta(seconds=1):
                scheduler.modify_job(job.id, next_run_time=now)

    def _job_failed(self, event: JobExecutionEvent) -> None:
        if isinstance(event.exception, StorageDamaged):
            self._live_damaged(event.job_id, event.exception)
            return
        if isinstance(event.exception, StorageUnavailable):
            # the server is down or refuses us: one line, no traceback; the next tick
            # tries again (the pool reconnects)
            log.warning("job %s: %s; trying again at its next tick", event.job_id, event.exception)
            self.notifier.status(f"database unreachable: {event.exception}")
            return
        log.error(
            "job %s failed (it runs again at its next tick): %s: %s",
            event.job_id,
            type(event.exception).__name__,
            event.exception,
            exc_info=(type(event.exception), event.exception, event.exception.__traceback__),
        )

    def _live_damaged(self, job_id: str, exc: StorageDamaged) -> None:
        """A page of the database met malformed while the daemon runs (a RAM disk that
        filled at the wrong moment): the database is opened again, as a start opens it,
        which checks the live file whole and, if it is the damaged one, sets it aside and
        builds it again from the card. What the card did not have yet, the next polls
        bring back. Runs on the jobs' one worker thread: no job uses the old one meanwhile.
        If it cannot be opened again, the daemon stops (exit 3) for systemd to restart."""
        assert self.storage is not None
        log.error("job %s: %s; opening the database again", job_id, exc)
        with contextlib.suppress(StorageError):
            self.storage.close()
        try:
            storage = self._open_when_reachable()
        except StorageError as failed:
            log.error("cannot open the database again: %s; stopping", failed)
            self._broken = str(failed)
            storage = None
        if storage is None:
            self._broken = self._broken or "stopped while opening the database again"
            self._stop.set()
            self._wake.set()
            return
        self.storage = storage
        log.info("database opened again: %s", storage.location)
        self.notifier.status(self._status_line())

    def _final_save(self) -> int:
        assert self.storage is not None
        try:
            result = self.storage.save()
        except StorageFull as exc:
            log.error("final save: %s; what is not saved stays in RAM until then", exc)
            return 0
        except StorageError as exc:
            log.error("final snapshot failed: %s", exc)
            return 3
        if result is not None:
            log.info("final snapshot: %s (%s)", result.detail, result.path)
        self._write_metrics()
        log.info("stopped")
        return 0

    # ------------------------------------------------------------ jobs (worker thread)

    def poll_job(self) -> None:
        assert self.storage is not None
        plan = PassPlan(
            due_only=True,
            save_every=self.config.storage.save_interval,
            say_clock=False,  # _judge_clock logs it, once
        )
        runtime = PassRuntime(
            self.config,
            self.storage,
            LogProgress(alive=self.notifier.alive, room=self._room),
            stop=self._stop,
            rng=self._rng,
        )
        if has_work(plan, runtime):
            # what the clock is believed to be, said in the log when it changes (the
            # pass marks what it stores under a clock not believed): at a pass only,
            # not at every idle tick (under the unit's ProtectClock, asking costs a
            # timedatectl)
            self._judge_clock(timestamps.now())
            stats = Pass(plan, runtime).run()
        else:
            # Most ticks: no feed due, nothing to extract. One read (0.04 ms here), not
            # a pass: its event loop, HTTP clients, lane and two write transactions
            # cost 3.7 ms of CPU here, every minute of an idle day.
            stats = RunStats()
        if stats.not_taking is None and ROOM_PROBLEMS[0] in self._room:
            self._room.discard(ROOM_PROBLEMS[0])
            log.info("taking new entries again: the RAM disk has room")
        self._beat()
        self._write_metrics()
        self.notifier.status(self._status_line())

    def save_job(self) -> None:
        try:
            self._save()
        finally:
            self._write_metrics()

    def _save(self) -> None:
        assert self.storage is not None
        try:
            result = self.storage.save()
        except StorageFull as exc:
            LogProgress(room=self._room).problem(str(exc))
            self.notifier.status(self._status_line())
            return
        except CardReadOnly as exc:
            self._card_read_only(str(exc))
            self.notifier.status(self._status_line())
            return
        if self._read_only:
            self._read_only = False
            log.info("the card is writable again: saving resumed")
        if ROOM_PROBLEMS[1] in self._room:
            self._room.discard(ROOM_PROBLEMS[1])
            log.info("saving to the card again: it has room")
        if result is not None and result.written:
            log.info(
                "snapshot written: %s (%d bytes, %.1fs)", result.path, result.size, result.seconds
            )
        self.notifier.status(self._status_line())

    def retention_job(self) -> None:
        """Retention, on a clock the daemon may believe only (feedsync/clock.py): else
        it waits for the next day's run, said once while it lasts. The articles fetched
        under a clock that could not be believed take this one's time first."""
        assert self.storage is not None
        retention = self.config.retention
        now = timestamps.now()
        verdict = self._judge_clock(now)
        if not verdict.believed:
            log.info("retention waits: the clock is %s: %s", verdict.state, verdict.why)
            return

        def before(days: int) -> str | None:
            return timestamps.to_iso(now - timedelta(days=days)) if days else None

        try:
            settled = self.storage.clock_settle(timestamps.to_iso(now))
            news, tombstones = self.storage.prune(
                before(retention.news_days), before(retention.tombstone_days)
            )
        except CardReadOnly as exc:  # said once by the save; retention waits with it
            log.debug("%s", exc)
            return
        if settled:
            log.info(
                "retention: %s fetched while the clock could not be believed now count "
                "as fetched today",
                plural(settled, "article"),
            )
        if news or tombstones:
            log.info(
                "retention: pruned %d articles older than %d days and %d tombstones",
                news,
                retention.news_days,
                tombstones,
            )

    def _judge_clock(self, now: datetime) -> clock.Verdict:
        """What the daemon may believe of its clock now; a change is logged once."""
        assert self.storage is not None
        verdict = clock.judge(now, self.storage.newest_poll(), clock.system_synchronization())
        if verdict.believed != self._clock_believed:
            if verdict.believed:
                log.info("the clock can be believed again: %s (%s)", verdict.state, verdict.why)
            else:
                log.warning(
                    "the clock cannot be believed (%s): %s; retention waits, and what is "
                    "fetched meanwhile is not judged by this clock's time",
                    verdict.state,
                    verdict.why,
                )
            self._clock_believed = verdict.believed
        self._clock = verdict
        return verdict

    def heartbeat_job(self) -> None:
        self.notifier.alive()
        self._beat()
        self.notifier.status(self._status_line())

    def _beat(self) -> None:
        """Tell `feedsync status` the daemon is alive (a meta row, not content: it does not
        make the next snapshot necessary)."""
        assert self.storage is not None
        self.storage.daemon_heartbeat(
            os.getpid(), socket.gethostname(), self._started_at, timestamps.to_iso(timestamps.now())
        )

    # ------------------------------------------------------------ helpers

    def _write_metrics(self) -> None:
        """The metrics file ([metrics] textfile) after a pass or a save. A failure is
        logged once while it lasts (it would come back every tick), never raised."""
        if self.config.metrics.textfile is None or self.storage is None:
            return
        from feedsync import metrics

        said: list[str] = []
        if metrics.update(self.config, self.storage, said.append):
            if self._metrics_failing:
                self._metrics_failing = False
                log.info("the metrics file is written again: %s", self.config.metrics.textfile)
        elif not self._metrics_failing:
            self._metrics_failing = True
            log.warning("%s (said once while it lasts)", said[0])
        else:
            log.debug("%s", said[0])

    def _card_read_only(self, reason: str) -> None:
        """A read-only card, logged once while it lasts (every save meets it: an hourly
        line saying the same would bury the rest of the journal)."""
        if self._read_only:
            log.debug("%s", reason)
            return
        self._read_only = True
        log.error("%s", reason)

    def _status_line(self) -> str:
        """One line for `systemctl status`: feeds, queue, articles, last save, and what is
        nearly full. Cheap counts only (it is made at every heartbeat)."""
        assert self.storage is not None
        try:
            counts = self.storage.status_counts(
                self.config.poll.failing_after, timestamps.to_iso(timestamps.now())
            )
            where = self.storage.status()
        except StorageError as exc:
            return f"database trouble: {exc}"
        queue = counts["queue_new"] + counts["queue_failed"]
        enabled = counts["feeds"] - counts["disabled"]
        line = (
            f"{plural(enabled, 'feed')} ({counts['failing'] + counts['retrying']} failing), "
            f"queue {queue}, {plural(counts['articles'], 'article')}"
        )
        if where.snapshot is not None:
            line += f", last snapshot {short_time(where.snapshot_at)}"
        if self._clock is not None and not self._clock.believed:
            line += f"; CLOCK {self._clock.state.upper()}: retention waits"
        if where.card_read_only:
            line += "; CARD READ-ONLY: nothing is saved"
        elif where.not_taking:
            line += "; NOT TAKING new entries: no room in RAM"
        elif where.nearly_full:
            line += "; nearly full: " + where.nearly_full[0].split(":")[0]
        return line

    def _reload_config(self) -> None:
        assert self.storage is not None
        try:
            fresh = config_module.load(self.config_file)
            urls = config_module.config_feeds(fresh)
        except ConfigError as exc:
            log.error("reload: the config has an error, keeping the previous one: %s", exc)
            return
        if (fresh.storage, fresh.daemon) != (self.config.storage, self.config.daemon):
            log.warning(
                "reload: [storage] and [daemon] changes need a restart; the rest is applied"
            )
            fresh = replace(fresh, storage=self.config.storage, daemon=self.config.daemon)
        added = self.storage.sync_config_feeds(urls, timestamps.to_iso(timestamps.now()))
        self.config = fresh
        log.info("reloaded %s: %d feeds in the config, %d new", fresh.source, len(urls), len(added))
        self.notifier.status(self._status_line())


def run_daemon(config: Config, config_file: str | None, **options: Any) -> int:
    return Daemon(config, config_file, **options).run()
