"""SQL over the store: one DuckDB view per table, plus derived views ("current state"
views and the per-run ``ledger`` of what each run spent).

``connect`` opens an in-memory DuckDB with the views (nobody holds a writable DuckDB
file; workers write Parquet parts instead). ``write_catalog`` saves the same views in a
``catalog.duckdb`` file that any DuckDB client can open read-only.

A table view reads ``<root>/tables/<table>/*/[!_.]*.parquet``: temp and compaction
files (names starting with ``_`` or ``.``) are never read. ``run_id`` is both a column
of every part and the hive partition; ``hive_types`` pins it to VARCHAR so numeric-
looking run ids are not turned into integers. DuckDB fails on a glob that matches no
file, so a table without parts gets an empty view with the table's columns instead;
such a view does not notice parts written later, so re-run ``connect``/``write_catalog``.
A column added to a model after a store's parts were written (``candidates.tokens_in``)
reads NULL from those parts, even when no part has it yet (``with_added_columns``).

S3 stores: DuckDB reads S3 through httpfs, loaded from the ``duckdb-extension-httpfs``
package (offline machines cannot download it), with a temporary secret built from the
same environment the store uses. A database file cannot hold a temporary secret, so
``write_catalog`` also writes ``<name>.setup.sql`` next to the catalog: the LOAD and
CREATE SECRET statements to run first, with a placeholder instead of the secret key.

Read-only: ``connect`` creates the views first (they read the store's parts), then locks
the connection down with DuckDB's own settings (``lock_down``): ``enable_external_access
= false``, with ``allowed_directories`` = a local store's folder, or on S3
``allowed_paths`` = exactly the parts the views name (httpfs resolves ``..`` in a URL
after the access check, so an S3 prefix would not confine it); a private spill
directory; no extension installing or loading; ``lock_configuration = true`` so no
later ``SET`` undoes it. Files outside the store can be neither read nor written.
``sql`` also refuses every statement but a query (``SELECT`` and friends, ``EXPLAIN`` of
one), so nothing writes inside the store either (``COPY ... TO``, ``EXPORT``,
``ATTACH``, ``CREATE``, ``SET``, ``INSTALL``/``LOAD``). ``write_catalog``'s file holds
only the views: a plain DuckDB client opens it with its own settings.

Cheap to open (``ratchet sql`` opens one per command): boto3 and httpfs load only for
an S3 store. ``union_by_name`` (for parts with different columns, e.g. written before a
column was added) reads every part's footer at each bind, so ``uniform_tables`` keeps
each part's schema fingerprint in a cache file outside the store (``storage.fs.
cache_file``; keyed by path, size and mtime): a table whose parts share one schema gets
a plain view, and only new parts' footers are read. The cache decides how a view reads
its parts, never which: each ``connect`` lists the store afresh, so a new part shows in
the next query; a stale or lost cache costs time, not rows.

Damaged parts: each table's view is created on its own. When a table's parts cannot be
bound (a truncated or corrupted part), its view still has the table's columns but fails
when queried, with an error naming the part and ``ratchet check --quarantine``; every
other view keeps working.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Collection
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas.arrow import to_arrow_schema
from schemas.tables import TABLES
from storage import cache
from storage.derived_views import DERIVED_VIEWS
from storage.sql_guard import check_read_only, lock_down_statements, quote as _quote
from storage.fs import S3Settings
from storage.store import PartFile, TableStore

SECRET_PLACEHOLDER = "<AWS_SECRET_ACCESS_KEY>"


def httpfs_path() -> Path:
    """The httpfs extension shipped by the ``duckdb-extension-httpfs`` wheel."""
    import duckdb_extension_httpfs  # S3 stores only

    package = Path(duckdb_extension_httpfs.__file__).parent
    return package / "extensions" / f"v{duckdb.__version__}" / "httpfs.duckdb_extension"


def connect(store: TableStore, *, locked: bool = True, views: list[str] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per table and the derived views
    (``DERIVED_VIEWS``: current state, the run ledger);
    ``locked`` (the default) then confines it to the store (see ``lock_down``).
    ``views``, when given, receives the CREATE VIEW statements as run (``cli.sql_fast``
    replays them for an unchanged local store)."""
    con = duckdb.connect()
    try:
        if not store.is_local:
            for statement in setup_statements(store, redact=False):
                con.execute(statement)
        listing = store.part_listing()
        # S3 + locked: views name their parts (see lock_down), from the one listing.
        parts = None
        if locked and not store.is_local:
            parts = {table: [store.location.uri_of(part.path) for part in found] for table, found in listing.items()}
        made = _create_views(con, store, parts, listing=listing, uniform=uniform_tables(con, store, listing))
        if views is not None:
            views.extend(made)
        if locked:
            lock_down(con, store, parts)
    except BaseException:
        con.close()
        raise
    return con


def lock_down(con: duckdb.DuckDBPyConnection, store: TableStore, parts: dict[str, list[str]] | None = None) -> None:
    """Confine ``con`` to the store, for good (``sql_guard.lock_down_statements``): a
    local store's whole folder; on S3 only the part files the views name (``parts``)."""
    files = None if store.is_local else sorted(uri for uris in (parts or {}).values() for uri in uris)
    for statement in lock_down_statements(store.root_uri, files):
        con.execute(statement)


_FINGERPRINTS = (
    "SELECT file_name, md5(string_agg(CAST(row(name, type, type_length, repetition_type, num_children, "
    "converted_type, scale, precision, field_id, logical_type) AS VARCHAR), ';' ORDER BY column_id)) "
    "FROM parquet_schema([{}]) GROUP BY file_name"
)


def uniform_tables(con: duckdb.DuckDBPyConnection, store: TableStore, listing: dict[str, list[PartFile]]) -> set[str]:
    """Tables whose parts all have one Parquet schema, so their views need no
    ``union_by_name``. Fingerprints come from the cache when a part's size and mtime
    match, else from its footer (one ``parquet_schema`` scan of all new parts); a table
    with a part whose footer cannot be read is left out, so its view takes the
    ``union_by_name`` path that names a damaged part."""
    path = cache.cache_file("views", store.root_uri)
    cached = cache.read_cache(path)
    entries: dict[str, dict[str, list]] = {}
    new: dict[str, list[PartFile]] = {}
    for table, parts in listing.items():
        known = cached.get(table) if isinstance(cached.get(table), dict) else {}
        entries[table] = {p.path: known[p.path] for p in parts if _fresh(known.get(p.path), p)}
        new[table] = [p for p in parts if p.path not in entries[table]]
    everything = _fingerprints(con, store, [p for parts in new.values() for p in parts])
    for table, parts in new.items():
        # A footer failed: read table by table, so only the damaged table is left out.
        found = everything if everything is not None else _fingerprints(con, store, parts) or {}
        entries[table].update({p.path: [p.size, p.mtime_ns, found[p.path]] for p in parts if p.path in found})
    if entries != cached:
        cache.write_cache(path, entries)
    return {table for table, parts in listing.items()
            if parts and len(entries[table]) == len(parts) and len({e[2] for e in entries[table].values()}) == 1}


def _fresh(entry: list | None, part: PartFile) -> bool:
    return isinstance(entry, list) and len(entry) == 3 and entry[:2] == [part.size, part.mtime_ns]


def _fingerprints(con: duckdb.DuckDBPyConnection, store: TableStore, parts: list[PartFile]) -> dict[str, str] | None:
    """Part path -> a hash of its Parquet schema; None when a footer cannot be read."""
    if not parts:
        return {}
    by_uri = {store.location.uri_of(part.path): part.path for part in parts}
    try:  # the URIs inline: binding a Python parameter makes DuckDB import pandas
        rows = con.execute(_FINGERPRINTS.format(", ".join(_quote(uri) for uri in by_uri))).fetchall()
    except duckdb.Error:
        return None
    return {by_uri[uri]: digest for uri, digest in rows if uri in by_uri}


def sql(store: TableStore, query: str) -> pa.Table:
    """Run a read-only query (see ``check_read_only``) over the store's views, on a
    connection confined to the store, and return the result as Arrow."""
    check_read_only(query)
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


def view_sql(con: duckdb.DuckDBPyConnection, store: TableStore, table: str, parts: list[str] | None = None,
             *, listed: bool | None = None, uniform: bool = False) -> str:
    """The SELECT behind a table's view: its parts (the glob of visible parts, or the
    ``parts`` given), or an empty typed SELECT when it has none (``listed``: whether a
    listing found parts, else the glob is asked). ``uniform``: all parts share one
    schema, so no ``union_by_name``."""
    pattern = f"{store.root_uri}/tables/{table}/*/[!_.]*.parquet"
    if listed is None and parts is None:
        listed = con.execute("SELECT 1 FROM glob(?) LIMIT 1", [pattern]).fetchone() is not None
    if parts is None and listed:
        source = _quote(pattern)
    elif parts:
        source = "[" + ", ".join(_quote(uri) for uri in parts) + "]"
    else:
        return f"SELECT {_typed_columns(con, table)} WHERE false"
    union = "" if uniform else "union_by_name = true, "
    return f"SELECT * FROM read_parquet({source}, hive_partitioning = true, {union}hive_types = {{'run_id': 'VARCHAR'}})"


def _create_views(con: duckdb.DuckDBPyConnection, store: TableStore, parts: dict[str, list[str]] | None = None, *,
                  listing: dict[str, list[PartFile]] | None = None, uniform: Collection[str] = ()) -> list[str]:
    """One view per table, each on its own: a table whose parts cannot be bound gets a
    view that fails when queried (``damaged_view_sql``) instead of failing them all.
    ``parts`` (table -> part URIs) replaces the glob with a fixed list; ``listing`` says
    which tables have parts; ``uniform`` names those read without ``union_by_name``.
    Returns the statements that made the views, in order."""
    made = []
    for table in TABLES:
        try:
            listed = None if listing is None else bool(listing[table])
            query = view_sql(con, store, table, None if parts is None else parts[table],
                             listed=listed, uniform=table in uniform)
            statement = f'CREATE OR REPLACE VIEW "{table}" AS {with_added_columns(table, query)}'
            con.execute(statement)
        except duckdb.Error as exc:
            statement = f'CREATE OR REPLACE VIEW "{table}" AS {damaged_view_sql(con, store, table, exc)}'
            con.execute(statement)
        made.append(statement)
    for name, query in DERIVED_VIEWS.items():
        made.append(f'CREATE OR REPLACE VIEW "{name}" AS {query}')
        con.execute(made[-1])
    return made


def with_added_columns(table: str, query: str) -> str:
    """``query`` with the columns added to the table's model after parts were written
    (fields with a default, e.g. ``candidates.tokens_in``) as NULL where no part has them:
    ``UNION ALL BY NAME`` with an empty typed row keeps every column the parts have and
    adds those they lack, even when no part has them yet (an old store). Filters and
    projections still reach the Parquet scan."""
    schema = to_arrow_schema(TABLES[table].model)
    added = [name for name, info in TABLES[table].model.model_fields.items() if not info.is_required()]
    columns = [f'CAST(NULL AS {_duckdb_type(schema.field(name).type)}) AS "{name}"' for name in added
               if _duckdb_type(schema.field(name).type)]
    return f"{query} UNION ALL BY NAME SELECT {', '.join(columns)} WHERE false" if columns else query


def damaged_view_sql(con: duckdb.DuckDBPyConnection, store: TableStore, table: str, exc: BaseException) -> str:
    """A view with the table's columns whose every scan raises an error naming the
    unreadable parts (found from their footers) and how to set them aside."""
    from storage.check import scan_footers

    try:
        damaged = scan_footers(store, table)
    except Exception:  # noqa: BLE001 - the DuckDB error below still says what failed
        damaged = []
    if damaged:
        named = "; ".join(f"{d.part.name} of run {d.part.run_id} ({d.error})" for d in damaged[:5])
        more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
        runs = sorted({d.part.run_id for d in damaged})
        what = f"unreadable part{'s' if len(damaged) > 1 else ''} {named}{more}"
        resume = f"`ratchet resume {runs[0]}`" if len(runs) == 1 else "`ratchet resume RUN_ID`"
    else:
        what = " ".join(str(exc).split("\n\nLINE")[0].split())
        resume = "`ratchet resume RUN_ID`"
    message = (f"table {table!r} cannot be read: {what}; run `ratchet check --quarantine` to move damaged parts "
               f"aside, then {resume} to re-derive them")
    # Every column *and* the row filter evaluate error(): no filter on a column (which
    # the optimizer could fold to false on a NULL constant) and no count(*) skips it.
    return f"SELECT {_typed_columns(con, table, 'e')} FROM (SELECT error({_quote(message)}) AS e) WHERE e IS NULL"


def _typed_columns(con: duckdb.DuckDBPyConnection, table: str, value: str = "NULL") -> str:
    """``CAST(<value> AS type) AS "column"`` for each column of the table's Arrow schema,
    typed as DuckDB reads the table's Parquet parts. The Arrow types of ``schemas.arrow``
    map directly; anything else asks DuckDB (an Arrow scan, which loads pandas)."""
    schema = to_arrow_schema(TABLES[table].model)
    types = [_duckdb_type(field.type) for field in schema]
    if None in types:
        empty = con.from_arrow(schema.empty_table())
        types = [str(dtype) for dtype in empty.types]
    return ", ".join(f'CAST({value} AS {dtype}) AS "{name}"' for name, dtype in zip(schema.names, types))


_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN",
                 pa.timestamp("us", tz="UTC"): "TIMESTAMP WITH TIME ZONE"}


def _duckdb_type(dtype: pa.DataType) -> str | None:
    """DuckDB's name for an Arrow type of ``schemas.arrow``; None for any other."""
    if pa.types.is_map(dtype):
        key, item = _duckdb_type(dtype.key_type), _duckdb_type(dtype.item_type)
        return f"MAP({key}, {item})" if key and item else None
    if pa.types.is_list(dtype):
        inner = _duckdb_type(dtype.value_type)
        return f"{inner}[]" if inner else None
    return next((name for known, name in _DUCKDB_TYPES.items() if dtype == known), None)


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
    import boto3  # S3 stores only: it costs a quarter second to import

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
