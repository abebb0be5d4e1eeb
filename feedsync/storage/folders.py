"""The folders the database files live in, and whom they belong to.

The live database's default folder, ``/dev/shm/feedsync-<uid>``, is a predictable name in
a world-writable place: another local user can make it before we do, as a folder of
their own (to read or swap the database) or as a symbolic link to one (``stat`` would
follow it and see our own folder, or theirs). So in a world-writable parent (``/dev/shm``,
``/tmp``) the folder itself is looked at, not what it points to (``lstat``): it must be a
real folder, ours, and closed to everyone else (0700). One we own with a wider mode (a
hand-made one, an old umask) is closed; anyone else's, or a link, is refused. Elsewhere
(a group-shared data folder, a link to a USB disk) the folder is the owner's business.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from feedsync.storage_errors import StorageError

PRIVATE = 0o700


def _ignore(message: str) -> None:
    pass


def _refuse(folder: Path, what: str) -> StorageError:
    return StorageError(f"{folder} {what}: refusing to keep the database there")


def check_directory(folder: Path, notice: Callable[[str], None] = _ignore) -> None:
    """Create the database's folder (0700), or check the one that is there; ``notice``
    hears it when a folder of ours in a world-writable place was closed to others."""
    try:
        folder.mkdir(mode=PRIVATE, parents=True)
        made = True
    except FileExistsError:
        made = False  # ours from an earlier run, or planted: looked at below
    except OSError as exc:
        raise StorageError(f"cannot create {folder}: {exc.strerror or exc}") from None
    try:
        info = os.lstat(folder)
        shared = bool(folder.parent.stat().st_mode & stat.S_IWOTH)
        if not shared:
            if not folder.is_dir():  # a link to a folder is fine here
                raise StorageError(f"cannot create {folder}: it is there, and not a folder")
            return
        if stat.S_ISLNK(info.st_mode):
            raise _refuse(folder, f"is a symbolic link (to {folder.readlink()})")
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse(folder, "is not a folder")
        if info.st_uid != os.geteuid():
            raise _refuse(
                folder,
                f"belongs to another user (uid {info.st_uid}) in the world-writable "
                f"{folder.parent}",
            )
        mode = info.st_mode & 0o7777
        if mode != PRIVATE:
            # ours: closed to the other users of the machine (they could read the
            # database, or make files in it)
            folder.chmod(PRIVATE)
            if not made:
                notice(
                    f"{folder} was open to other users (mode {mode:04o}) in the "
                    f"world-writable {folder.parent}: made it 0700"
                )
    except OSError as exc:
        raise StorageError(f"cannot use {folder}: {exc.strerror or exc}") from None
