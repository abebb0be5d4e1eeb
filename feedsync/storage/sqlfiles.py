"""Loading the SQL files under ``sql/``: the schema, its migrations, the named queries.

SQL lives in files, not in Python strings, so that it can be read, reviewed and run by
hand, and so that a second engine (``sql/postgresql/``) can sit beside it with the same
query names. In a source checkout the files are at the top of the repository; an
installed wheel carries them as ``feedsync/sql`` (pyproject.toml: force-include).
"""

from __future__ import annotations

import re
import sqlite3
from functools import cache
from pathlib import Path

from feedsync.storage_errors import StorageError

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@cache
def sql_dir() -> Path:
    here = Path(__file__).resolve().parent.parent  # .../feedsync
    for candidate in (here / "sql", here.parent / "sql"):
        if (candidate / "schema.sql").is_file():
            return candidate
    raise FileNotFoundError(
        f"feedsync's SQL files are missing (looked in {here}/sql and "
        f"{here.parent}/sql): the installation is incomplete"
    )


def parse_named(text: str, origin: str) -> dict[str, str]:
    """Split a file into its ``-- name: x`` queries (comments and all, one statement each)."""
    queries: dict[str, str] = {}
    marks = list(_NAME.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        lines = text[mark.end() : following.start() if following else len(text)].splitlines()
        while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
            lines.pop()  # a section's heading after the last query of the one before
        body = "\n".join(lines).strip()
        name = mark.group(1)
        if name in queries:
            raise ValueError(f"{origin}: query {name!r} defined twice")
        if not body.rstrip().endswith(";"):
            raise ValueError(f"{origin}: query {name!r} does not end with ';'")
        queries[name] = body
    return queries


def _folder_queries(folder: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.sql")):
        if path.name == "schema.sql":
            continue
        for name, text in parse_named(path.read_text(encoding="utf-8"), str(path)).items():
            if name in found:
                raise ValueError(f"{path}: query {name!r} also defined in another file")
            found[name] = text
    return found


@cache
def queries(engine_dir: str = "") -> dict[str, str]:
    """All named queries of an engine, by name. The top of sql/ holds every query in SQL
    both engines run (and SQLite's own); an engine's folder (sql/postgresql/) holds only
    the queries it writes differently, which replace those of the same name."""
    found = _folder_queries(sql_dir())
    if engine_dir:
        found |= _folder_queries(sql_dir() / engine_dir)
    return found


_PARAMETER = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def pyformat(query: str) -> str:
    """A named query with ``:name`` parameters (how every file under sql/ writes them)
    in psycopg's ``%(name)s`` style; a literal ``%`` doubled. Comment lines go first: a
    parameter named in a comment would be sent, and the server cannot type it."""
    code = "\n".join(ln for ln in query.splitlines() if not ln.lstrip().startswith("--"))
    return _PARAMETER.sub(r"%(\1)s", code.replace("%", "%%"))


def split_statements(script: str) -> list[str]:
    """A script cut into complete statements (triggers included), for use inside one
    transaction: ``executescript`` would COMMIT first, which the migration lock forbids."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in buffer.splitlines()
    ):
        raise ValueError(f"incomplete SQL statement at the end of the script: {buffer[:80]!r}")
    return statements


def schema_steps(engine_dir: str = "") -> list[tuple[int, Path]]:
    """(version, file) for the schema (version 1) and each migration, in order."""
    folder = sql_dir() / engine_dir if engine_dir else sql_dir()
    steps = [(1, folder / "schema.sql")]
    for path in sorted((folder / "migrations").glob("*.sql")):
        match = _MIGRATION.match(path.name)
        if not match:
            raise ValueError(f"{path}: migrations are named NNNN_what_it_does.sql")
        steps.append((int(match.group(1)), path))
    versions = [v for v, _ in steps]
    if versions != list(range(1, len(steps) + 1)):
        raise ValueError(f"schema versions in {folder} are not 1, 2, 3...: {versions}")
    return steps


def steps_to_apply(
    steps: list[tuple[int, Path]], version: int, where: str
) -> list[tuple[int, Path]]:
    """The steps of :func:`schema_steps` that a database at schema ``version`` (``where``,
    for the error) still needs. A database newer than this feedsync is refused: its tables
    may mean what this code does not know."""
    newest = steps[-1][0]
    if version > newest:
        raise StorageError(
            f"{where} has schema version {version}, newer than this feedsync "
            f"knows ({newest}): upgrade feedsync"
        )
    return [(target, script) for target, script in steps if target > version]


def migrate_sqlite(conn: sqlite3.Connection, where: str) -> None:
    """Apply the SQLite schema and its migrations to the database of ``conn`` (opened with
    ``isolation_level=None``), inside one BEGIN IMMEDIATE transaction that first reads
    ``PRAGMA user_version``: processes starting together on an empty file apply it once.
    A database newer than this feedsync is refused."""
    steps = schema_steps()
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for target, script in steps_to_apply(steps, version, where):
            for statement in split_statements(script.read_text(encoding="utf-8")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target:d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
