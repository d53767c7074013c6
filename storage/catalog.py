"""SQL over the store: one DuckDB view per table, plus "current state" views.

``connect`` opens an in-memory DuckDB with the views (nobody holds a writable DuckDB
file; workers write Parquet parts instead). ``write_catalog`` saves the same views in a
``catalog.duckdb`` file that any DuckDB client can open read-only.

A table view reads ``<root>/tables/<table>/*/[!_.]*.parquet``: temp and compaction
files (names starting with ``_`` or ``.``) are never read. ``run_id`` is both a column
of every part and the hive partition; ``hive_types`` pins it to VARCHAR so numeric-
looking run ids are not turned into integers. DuckDB fails on a glob that matches no
file, so a table without parts gets an empty view with the table's columns instead;
such a view does not notice parts written later, so re-run ``connect``/``write_catalog``.

S3 stores: DuckDB reads S3 through httpfs, loaded from the ``duckdb-extension-httpfs``
package (offline machines cannot download it), with a temporary secret built from the
same environment the store uses. A database file cannot hold a temporary secret, so
``write_catalog`` also writes ``<name>.setup.sql`` next to the catalog: the LOAD and
CREATE SECRET statements to run first, with a placeholder instead of the secret key.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import boto3
import duckdb
import duckdb_extension_httpfs
import pyarrow as pa

from schemas.arrow import to_arrow_schema
from schemas.tables import TABLES
from storage.fs import S3Settings
from storage.store import TableStore

SECRET_PLACEHOLDER = "<AWS_SECRET_ACCESS_KEY>"

CURRENT_VIEWS = {
    # The status a run is in now: its latest event; a terminal status wins a tie.
    "runs_current": (
        "SELECT * FROM runs QUALIFY row_number() OVER (PARTITION BY run_id "
        "ORDER BY event_at DESC, CASE status WHEN 'running' THEN 0 ELSE 1 END DESC) = 1"
    ),
    # Who holds each alias of each registered name now (alias NULL: the name's latest
    # un-aliased event): the latest registry event per (name, alias).
    "registry_current": (
        "SELECT * FROM registry QUALIFY row_number() OVER (PARTITION BY name, alias "
        "ORDER BY event_at DESC, version DESC) = 1"
    ),
}


def httpfs_path() -> Path:
    """The httpfs extension shipped by the ``duckdb-extension-httpfs`` wheel."""
    package = Path(duckdb_extension_httpfs.__file__).parent
    return package / "extensions" / f"v{duckdb.__version__}" / "httpfs.duckdb_extension"


def connect(store: TableStore) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per table and the current-state views."""
    con = duckdb.connect()
    try:
        if not store.is_local:
            for statement in setup_statements(store, redact=False):
                con.execute(statement)
        _create_views(con, store)
    except BaseException:
        con.close()
        raise
    return con


def sql(store: TableStore, query: str) -> pa.Table:
    """Run one query over the store's views and return the result as Arrow."""
    con = connect(store)
    try:
        return con.execute(query).to_arrow_table()
    finally:
        con.close()


def write_catalog(store: TableStore, path: str | os.PathLike[str]) -> Path:
    """Write a DuckDB database file holding the views (absolute paths or s3:// URIs)
    and close it; replaces an existing file atomically. For an S3 store, also writes
    ``<name>.setup.sql`` (see the module docstring). Returns the catalog path."""
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        con = duckdb.connect(str(temp))
        try:
            if not store.is_local:
                for statement in setup_statements(store, redact=False):
                    con.execute(statement)
            _create_views(con, store)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
        temp.with_name(temp.name + ".wal").unlink(missing_ok=True)
    if not store.is_local:
        setup = target.with_suffix(".setup.sql")
        setup.write_text(_setup_script(store))
    return target


def view_sql(con: duckdb.DuckDBPyConnection, store: TableStore, table: str) -> str:
    """The SELECT behind a table's view: its parts, or an empty typed SELECT when it has none."""
    pattern = f"{store.root_uri}/tables/{table}/*/[!_.]*.parquet"
    if con.execute("SELECT 1 FROM glob(?) LIMIT 1", [pattern]).fetchone():
        return (
            f"SELECT * FROM read_parquet({_quote(pattern)}, hive_partitioning = true, "
            "union_by_name = true, hive_types = {'run_id': 'VARCHAR'})"
        )
    empty = con.from_arrow(to_arrow_schema(TABLES[table].model).empty_table())
    columns = ", ".join(f'CAST(NULL AS {dtype}) AS "{name}"' for name, dtype in zip(empty.columns, empty.types))
    return f"SELECT {columns} WHERE false"


def _create_views(con: duckdb.DuckDBPyConnection, store: TableStore) -> None:
    for table in TABLES:
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS {view_sql(con, store, table)}')
    for name, query in CURRENT_VIEWS.items():
        con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {query}')


def setup_statements(store: TableStore, *, redact: bool) -> list[str]:
    """SQL that lets DuckDB read an S3 store: load httpfs from the package path (no
    downloads) and create a temporary S3 secret scoped to the store's bucket. With
    ``redact``, the secret key is replaced by a placeholder (for files and logs)."""
    settings = S3Settings.from_env()
    bucket = store.root_uri.removeprefix("s3://").split("/", 1)[0]
    options = ["TYPE s3", f"REGION {_quote(settings.region)}", f"SCOPE {_quote(f's3://{bucket}')}"]
    if settings.endpoint:
        options += [f"ENDPOINT {_quote(settings.endpoint)}", "URL_STYLE 'path'"]
        options.append(f"USE_SSL {'true' if settings.scheme == 'https' else 'false'}")
    credentials = boto3.Session().get_credentials()
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        secret = SECRET_PLACEHOLDER if redact else frozen.secret_key
        options += [f"KEY_ID {_quote(frozen.access_key)}", f"SECRET {_quote(secret)}"]
        if frozen.token:
            options.append(f"SESSION_TOKEN {_quote('<AWS_SESSION_TOKEN>' if redact else frozen.token)}")
    return [
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        f"LOAD {_quote(str(httpfs_path()))}",
        f"CREATE OR REPLACE SECRET ratchet_s3 ({', '.join(options)})",
    ]


def _setup_script(store: TableStore) -> str:
    header = (
        f"-- Run in your DuckDB session before querying the catalog of {store.root_uri}.\n"
        "-- DuckDB cannot keep a secret in a database file: replace the placeholder with your\n"
        "-- secret key. Online clients may use INSTALL httpfs; LOAD httpfs; instead of the\n"
        f"-- LOAD below, which needs DuckDB {duckdb.__version__} and this machine's Ratchet venv.\n"
    )
    return header + "".join(f"{statement};\n" for statement in setup_statements(store, redact=True))


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
