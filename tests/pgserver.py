"""A throwaway PostgreSQL server for the tests, from Debian's ``postgresql`` package.

``initdb`` into a temporary directory (as the ``postgres`` user when the tests run as
root: the server refuses to run as root), ``pg_ctl start`` listening on 127.0.0.1 on a
free port and on a socket in that directory, with password authentication over TCP (so
the tests see feedsync handle a password it must never print). Durability is off
(fsync, synchronous_commit): the cluster lives for one test session. Each test gets a
database of its own (:meth:`PostgresServer.create_database`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

SUPERUSER = "postgres"
PASSWORD = "s3cret-" + secrets.token_hex(4)  # random: a test grepping output for it is sound


def find_bin() -> Path | None:
    """The newest installed /usr/lib/postgresql/N/bin with initdb, or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="feedsync-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._count = 0

    def _run(self, *command: str | Path) -> None:
        done = subprocess.run(
            [*self._as, *map(str, command)], capture_output=True, text=True, timeout=120
        )
        if done.returncode:
            raise RuntimeError(f"{command[0]} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as:
            shutil.chown(pwfile, "postgres")
        self._run(
            self.bindir / "initdb",
            "-D",
            self.data,
            "-U",
            SUPERUSER,
            "--pwfile",
            pwfile,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        )
        pwfile.unlink()
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            self.bindir / "pg_ctl",
            "-D",
            self.data,
            "-l",
            self.root / "server.log",
            "-o",
            options,
            "-w",
            "start",
        )

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: its backends end their sessions; ``immediate``: as
        if it crashed) and start it again with the same options, port and data: every
        client connection is dropped."""
        self._run(
            self.bindir / "pg_ctl",
            "-D",
            self.data,
            "-l",
            self.root / "server.log",  # else the server keeps pg_ctl's output pipes open
            "-m",
            mode,
            "-w",
            "restart",
        )

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(self.bindir / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str, password: bool = True) -> str:
        secret = f":{PASSWORD}" if password else ""
        return f"postgresql://{SUPERUSER}{secret}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, label: str = "t") -> str:
        """A new empty database; returns its URL (with the password)."""
        self._count += 1
        name = f"{label}_{os.getpid()}_{self._count}"
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with contextlib.suppress(Exception):
            self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def running(bindir: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
