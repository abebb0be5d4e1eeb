"""What goes wrong with a database, as the stages and commands see it: one exception type
per way they must react (report and exit 3, wait and retry, stop taking entries, run
without saving). ``str()`` of each is a one-line reason, never a password."""

from __future__ import annotations


class StorageError(Exception):
    """The database cannot be opened, read or written; ``str()`` is a one-line reason."""


class StorageDamaged(StorageError):
    """SQLite found a page of a database malformed, or the file not a database at all,
    while reading it (``busy.is_damage``): retrying cannot help. Met on the live
    database's connection, the next start checks that file whole (``card_restore``)."""


class StorageUnavailable(StorageError):
    """The database server cannot be reached, or refuses us (down, wrong password): the
    daemon waits and tries again; a one-shot command reports it and exits."""


class StorageFull(StorageError):
    """The RAM disk or the card has no room for this now (``str()`` says which, and how
    full): no new entries are taken, or a save is put off, while reads and saves of
    what fits go on. A pass reports it and goes on; it is not a failure of the run."""


class CardReadOnly(StorageError):
    """The card's file system is mounted read-only (the kernel remounts an SD card so
    after write errors): feedsync reads the card and runs in RAM, but nothing can be
    saved. An operation that must write the card (a save, retention) raises it; reads
    go on. ``str()`` says which card, and what it means for the data."""


class UnknownArticle(LookupError):
    """A page of articles was asked to continue after an article the database does not
    hold (never had, or retention took it since): the caller answers that the link is
    stale rather than end the listing as if nothing came after it."""


SNAPSHOTS_DO_NOT_APPLY = (
    "snapshots do not apply to a PostgreSQL database ([storage] url): back it up with "
    "pg_dump, and restore with pg_restore or psql"
)
