"""[metrics] textfile: the status figures for node_exporter's textfile collector, in
Prometheus' text format (feedsync/metrics.py), checked with prometheus-client's parser."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import FeedsyncEnv, RunningDaemon, Site, wait_until
from prometheus_client.parser import text_string_to_metric_families
from sitegen import Item

from feedsync import config, metrics


def parse(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted labels: value}, every family a gauge (what the parser says)."""
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family
        assert family.name.startswith("feedsync_") and family.documentation
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def unix(*when: int) -> int:
    return int(datetime(*when, tzinfo=UTC).timestamp())


def value(found: dict[str, Any], name: str, **labels: str) -> float:
    return float(found[name][tuple(sorted(labels.items()))])


REPORT: dict[str, Any] = {
    "version": '1.2.3 "odd"\\',
    "daemon": {"running": True},
    "feeds": {"total": 6, "healthy": 3, "retrying": 1, "failing": 1, "disabled": 1},
    "queue": {"new": 4, "failed_waiting": 2, "gone": 7},
    "articles": {"today": 5, "total": 120},
    "next_poll_at": "2026-11-23T13:05:00Z",
    "last_success_at": "2026-11-23T12:35:00Z",
    "storage": {
        "engine": "sqlite",
        "live": "/run/feedsync/feedsync.db",
        "live_bytes": 4096,
        "snapshot": "/var/lib/feedsync/feedsync.db",
        "snapshot_bytes": 81920,
        "snapshot_at": "2026-11-23T12:00:00Z",
        "unsaved_changes": 9,
        "ram_budget": 1000000,
        "ram_disk_size": 2000000,
        "ram_disk_free": 1500000,
        "card_budget": 30000000,
        "card_disk_size": 32000000,
        "card_disk_free": 20000000,
        "nearly_full": ["card: ..."],
        "not_taking": None,
        "card_read_only": None,
        "card_behind": None,
    },
}


def test_render_gives_every_figure_in_the_text_format() -> None:
    text = metrics.render(REPORT, written_at=1_795_000_000.7)
    found = parse(text)
    assert value(found, "feedsync_feeds", health="ok") == 3
    assert value(found, "feedsync_feeds", health="failing") == 1
    assert value(found, "feedsync_feeds", health="disabled") == 1
    assert value(found, "feedsync_articles", state="extracted") == 120
    assert value(found, "feedsync_articles", state="pending") == 4
    assert value(found, "feedsync_articles", state="failed") == 2
    assert value(found, "feedsync_articles", state="given_up") == 7
    assert value(found, "feedsync_queue_length") == 6
    assert value(found, "feedsync_last_poll_success_timestamp_seconds") == unix(
        2026, 11, 23, 12, 35
    )
    assert value(found, "feedsync_snapshot_timestamp_seconds") == unix(2026, 11, 23, 12, 0)
    assert value(found, "feedsync_snapshot_size_bytes") == 81920
    assert value(found, "feedsync_live_database_size_bytes") == 4096
    assert value(found, "feedsync_filesystem_free_bytes", disk="card") == 20_000_000
    assert value(found, "feedsync_budget_bytes", disk="ram") == 1_000_000
    assert value(found, "feedsync_problem", kind="nearly_full") == 1
    assert value(found, "feedsync_problem", kind="card_read_only") == 0
    assert value(found, "feedsync_daemon_running") == 1
    assert value(found, "feedsync_metrics_written_timestamp_seconds") == 1_795_000_000
    # a label value with quotes and a backslash comes back as it was
    assert value(found, "feedsync_info", version='1.2.3 "odd"\\', engine="sqlite") == 1
    assert text.endswith("\n") and "\n\n" not in text


def test_figures_not_known_are_left_out() -> None:
    """No save yet, no poll yet; PostgreSQL: no card, no RAM disk."""
    report = json.loads(json.dumps(REPORT))
    report.update(last_success_at=None, next_poll_at=None)
    report["storage"].update(
        engine="postgresql",
        snapshot=None,
        snapshot_bytes=None,
        snapshot_at=None,
        unsaved_changes=None,
        **dict.fromkeys(("ram_budget", "ram_disk_size", "ram_disk_free"), None),
        **dict.fromkeys(("card_budget", "card_disk_size", "card_disk_free"), None),
    )
    found = parse(metrics.render(report, written_at=0))
    for name in (
        "feedsync_snapshot_timestamp_seconds",
        "feedsync_snapshot_size_bytes",
        "feedsync_last_poll_success_timestamp_seconds",
        "feedsync_filesystem_free_bytes",
        "feedsync_problem",
    ):
        assert name not in found
    assert value(found, "feedsync_live_database_size_bytes") == 4096


def test_the_config_section() -> None:
    assert config.from_dict({}).metrics.textfile is None  # off by default
    cfg = config.from_dict({"metrics": {"textfile": "~/feedsync.prom"}})
    assert cfg.metrics.textfile == Path("~/feedsync.prom").expanduser()


def _prom_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_run_writes_the_figures_status_gives(fs_card: FeedsyncEnv, site: Site) -> None:
    pages = [site.page(f"story-{n}", f"Story {n}") for n in range(3)]
    good = site.feed("news.xml", [Item(f"Story {n}", url) for n, url in enumerate(pages)])
    broken = site.server.set("/broken.xml", "x", status=500)
    folder = fs_card.root / "textfile"
    folder.mkdir()
    target = folder / "feedsync.prom"
    fs_card.configure([good, broken], metrics={"textfile": str(target)})
    done = fs_card.run("run")
    assert "metrics" not in done.stderr
    found = parse(target.read_text())
    report = json.loads(fs_card.run("status", "--json").stdout)
    assert value(found, "feedsync_articles", state="extracted") == report["articles"]["total"] == 3
    assert value(found, "feedsync_feeds", health="ok") == report["feeds"]["healthy"] == 1
    assert value(found, "feedsync_feeds", health="retrying") == report["feeds"]["retrying"] == 1
    assert value(found, "feedsync_queue_length") == 0
    assert value(found, "feedsync_snapshot_size_bytes") == report["storage"]["snapshot_bytes"]
    saved = report["storage"]["snapshot_at"]
    assert saved and value(found, "feedsync_snapshot_timestamp_seconds") == metrics._unix(saved)
    assert value(found, "feedsync_last_poll_success_timestamp_seconds") == metrics._unix(
        report["last_success_at"]
    )
    # readable by node_exporter (another user), whatever the umask; no temporary left
    assert stat.S_IMODE(target.stat().st_mode) & 0o444 == 0o444
    assert _prom_files(folder) == ["feedsync.prom"]

    # the next run replaces it whole: a new file renamed over the old one
    before = target.stat().st_ino
    site.feed("news.xml", [Item(f"Story {n}", url) for n, url in enumerate(pages)])
    fs_card.run("run")
    assert target.stat().st_ino != before
    assert _prom_files(folder) == ["feedsync.prom"]
    assert value(parse(target.read_text()), "feedsync_feeds", health="retrying") == 1


def test_a_snapshot_writes_it(fs_card: FeedsyncEnv, site: Site) -> None:
    url = site.feed("news.xml", [Item("One", site.page("one"))])
    target = fs_card.root / "feedsync.prom"
    fs_card.configure([url])
    fs_card.run("run")
    assert not target.exists()  # off by default
    fs_card.configure(metrics={"textfile": str(target)})
    fs_card.run("save", "--force")
    found = parse(target.read_text())
    assert value(found, "feedsync_articles", state="extracted") == 1
    assert value(found, "feedsync_unsaved_changes") == 0


@pytest.mark.parametrize("where", ["missing-folder/feedsync.prom", "a-file/feedsync.prom"])
def test_a_metrics_file_that_cannot_be_written_is_one_line(
    fs_card: FeedsyncEnv, site: Site, where: str
) -> None:
    url = site.feed("news.xml", [Item("One", site.page("one")), Item("Two", site.page("two"))])
    (fs_card.root / "a-file").write_text("not a folder")
    target = fs_card.root / where
    fs_card.configure([url], metrics={"textfile": str(target)})
    done = fs_card.run("run")  # exit 0: the pass is done and saved
    warnings = [line for line in done.stderr.splitlines() if "metrics" in line]
    assert warnings == [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"feedsync: warning: cannot write the metrics file {target}: "
    ), done.stderr
    assert fs_card.scalar("SELECT count(*) FROM news") == 2
    assert json.loads(fs_card.run("status", "--json").stdout)["storage"]["unsaved_changes"] == 0
    done = fs_card.run("save", "--force")
    assert done.stderr.count("cannot write the metrics file") == 1
    assert not os.path.lexists(target)


def test_the_daemon_writes_it_after_its_passes_and_its_last_save(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    url = site.feed("news.xml", [Item("One", site.page("one")), Item("Two", site.page("two"))])
    target = fs_card.root / "feedsync.prom"
    fs_card.configure([url], metrics={"textfile": str(target)})
    daemon = start_daemon()

    def extracted() -> float | None:
        try:
            found = parse(target.read_text())
        except (OSError, ValueError):
            return None
        return value(found, "feedsync_articles", state="extracted")

    wait_until(lambda: extracted() == 2, "the metrics file after the daemon's first pass")
    assert value(parse(target.read_text()), "feedsync_daemon_running") == 1
    assert daemon.stop() == 0
    found = parse(target.read_text())  # written after the final save
    assert value(found, "feedsync_unsaved_changes") == 0
    assert "metrics" not in daemon.output()
