"""`ratchet sql` on its light path: DuckDB and the standard library only.

The full CLI costs about 0.35 s of imports (typer, rich, pydantic through the schemas,
pyarrow through the store) before any SQL runs, three times what DuckDB itself takes to
start. The views a query runs over depend only on the store's parts and on the code that
writes view statements, so after a full `ratchet sql` on a local store the statements
are kept in this user's cache (``storage.cache``, kind ``sqlviews``) under a digest of
both: every file under ``tables/<table>/<partition>/`` (name, size, mtime) and every
source file of ``schemas/`` and ``storage/`` (size, mtime). The next `ratchet sql`
lists the store afresh, and when the digest matches it replays the statements on a
connection locked down exactly like the catalog's (``storage.sql_guard``) and runs the
query; a new, removed or rewritten part, or changed code, is a miss and takes the full
path, which writes the cache again. So the cache decides how fast a query starts,
never which rows it sees.

Only ``ratchet sql QUERY [--store S] [--format table|json]`` on a local store takes
this path; anything else (``--help``, ``--format csv``, an S3 store, a refused or
failing query, whose message the full path words) runs the full CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import duckdb

from cli.text_table import cells, text_table
from storage.cache import cache_file, read_cache, write_cache
from storage.sql_guard import ReadOnlyError, check_read_only, lock_down_statements
from storage.uris import resolve_store

KIND = "sqlviews"
FORMATS = ("table", "json")
_REPO = Path(__file__).resolve().parents[1]
_SOURCES = ("schemas", "storage")
"""The packages whose code writes the view statements (tables' columns, derived views)."""


def parse(argv: list[str]) -> tuple[str, str | None, str] | None:
    """(query, --store, --format) of ``sql QUERY [--store S] [--format F]``; None for any
    other command line."""
    if not argv or argv[0] != "sql":
        return None
    query, options = None, {"--store": None, "--format": "table"}
    args = iter(argv[1:])
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in options:
            value = value if eq else next(args, None)
            if value is None:
                return None
            options[name] = value
        elif arg.startswith("-") or query is not None:
            return None
        else:
            query = arg
    if query is None or options["--format"] not in FORMATS:
        return None
    return query, options["--store"], options["--format"]


def layout(root: str) -> str:
    """The digest the cached statements are kept under (see the module docstring)."""
    entries = []
    tables = Path(root) / "tables"
    for table in _dirs(tables):
        for partition in _dirs(Path(table.path)):
            for part in _entries(Path(partition.path)):
                stat = part.stat()
                entries.append((table.name, partition.name, part.name, stat.st_size, stat.st_mtime_ns))
    code = []
    for package in _SOURCES:
        for source in sorted((_REPO / package).glob("*.py")):
            stat = source.stat()
            code.append((package, source.name, stat.st_size, stat.st_mtime_ns))
    return hashlib.sha256(json.dumps([sorted(entries), code]).encode()).hexdigest()


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _dirs(folder: Path) -> list[os.DirEntry]:
    return [entry for entry in _entries(folder) if entry.is_dir()]


def remember(root: str, digest: str, statements: list[str]) -> None:
    """Keep the view statements of the store at ``root`` under ``digest``."""
    write_cache(cache_file(KIND, root), {"layout": digest, "statements": statements})


def recalled(root: str, digest: str) -> list[str] | None:
    cached = read_cache(cache_file(KIND, root))
    statements = cached.get("statements")
    if cached.get("layout") != digest or not isinstance(statements, list):
        return None
    return statements


def render(names: list[str], rows: list[tuple], format: str) -> str:
    """The printed result, the same on both paths."""
    if format == "json":
        return json.dumps([dict(zip(names, row)) for row in rows], default=str, indent=1)
    return text_table(names, cells(rows))


def run(argv: list[str]) -> bool:
    """Answer ``argv`` on the light path; False when it must take the full CLI."""
    parsed = parse(argv)
    if parsed is None:
        return False
    query, store, format = parsed
    try:
        root = resolve_store(store, must_exist=True)
    except ValueError:
        return False
    if root.startswith("s3://"):
        return False
    statements = recalled(root, layout(root))
    if statements is None:
        return False
    try:
        check_read_only(query)
    except ReadOnlyError:
        return False
    con = duckdb.connect()
    try:
        for statement in statements + lock_down_statements(root):
            con.execute(statement)
        cursor = con.execute(query)
        names = [column[0] for column in cursor.description or ()]
        rows = cursor.fetchall()
    except duckdb.Error:
        return False
    finally:
        con.close()
    print(render(names, rows, format))
    return True
