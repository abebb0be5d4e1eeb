"""What every command shares: the exit codes, a usage error, the one-line notice, opening
the storage with the config file's feeds, the metrics file after a pass or a save, and
files written whole or not at all."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feedsync import config as config_module

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.storage import Storage

# the exit codes: a contract for cron and scripts (feedsync/cli/__init__.py, README)
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STORAGE = 3
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for cat | head


class UsageError(Exception):
    """A bad argument; printed as one line, exit 2."""


def notice(message: str) -> None:
    print(f"feedsync: {message}", file=sys.stderr, flush=True)


def open_storage(config: Config, *, new_card: bool = False, saving: bool = False) -> Storage:
    """Open the database and bring the config file's feeds into it. A read-only card is
    said here, unless the command is a save (``saving``), whose error says it."""
    from feedsync import storage as storage_module
    from feedsync import timestamps

    feeds = config_module.config_feeds(config)
    storage = storage_module.open_storage(
        config.storage, notice=notice, keep=storage_module.Keep.of(config), new_card=new_card
    )
    try:
        storage.sync_config_feeds(feeds, timestamps.to_iso(timestamps.now()))
        if storage_module.saves_to_card(config.storage) and not saving:
            # reads work on a read-only card, and the user hears at once that nothing
            # they do is kept; a command that must save exits 3 later
            read_only = storage.status().card_read_only
            if read_only is not None:
                notice(read_only)
    except BaseException:
        storage.close()
        raise
    return storage


def write_metrics(config: Config, storage: Storage) -> None:
    """The metrics file ([metrics] textfile), after a pass or a save; a failure to
    write it is one line, and the command's exit code stays what its work says."""
    if config.metrics.textfile is not None:
        from feedsync import metrics

        metrics.update(config, storage, lambda message: notice(f"warning: {message}"))


def feed_ref(storage: Storage, ref: str) -> tuple[int, str]:
    """The feed a user names, by the id ``feedsync feeds`` shows or by its URL (any
    spelling of it): its id and URL. Every command that names a feed takes both."""
    from feedsync.canonical import canonical_url

    if ref.isdigit():
        found = next((f for f in storage.feed_health() if f.id == int(ref)), None)
        if found is None:
            raise UsageError(f"no such feed: {ref} (see 'feedsync feeds' for the ids)")
        return found.id, found.url
    url = canonical_url(ref)
    if url is None:
        raise UsageError(f"not a feed's id or an http:// or https:// URL: {ref!r}")
    feed_id = storage.feed_id(url)
    if feed_id is None:
        raise UsageError(f"no such feed: {url} (see 'feedsync feeds')")
    return feed_id, url


def atomic_text(path: Path) -> Any:
    """Write to a temporary file beside ``path``, renamed over it at the end: a failed
    export never leaves half a file under the name asked for.

    The file gets the mode any file the user makes gets (0644 under umask 022), or the
    mode of the file it replaces: ``mkstemp`` makes its temporary 0600, which suits the
    databases and the config, not an export the user asked for to share or publish."""
    import contextlib
    import os
    import tempfile

    @contextlib.contextmanager
    def writer() -> Iterator[Any]:
        folder = path.resolve().parent
        if not folder.is_dir():
            raise UsageError(f"cannot write {path}: {folder} is not a folder")
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        try:
            os.fchmod(fd, _mode_for(path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                yield handle
            Path(temporary).replace(path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    return writer()


def _mode_for(path: Path) -> int:
    """The mode of the file at ``path``, or what the umask gives a new one."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
