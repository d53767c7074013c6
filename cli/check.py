"""`ratchet check [RUN_ID] [--quarantine]`: find the store's unreadable parts, and
move them aside so queries work again and `ratchet resume` re-derives them."""

from __future__ import annotations

from datetime import UTC, datetime

import typer
from rich.console import Console
from rich.table import Table

from cli.errors import UsageError
from storage.check import CheckResult, check_store, quarantine, record_damage
from storage.store import check_name, open_store


def run_check(console: Console, store_uri: str, run_id: str | None, quarantine_parts: bool) -> None:
    """Read every part (of one run) in full; print the damaged ones, optionally move them
    to <store>/quarantine and mark their runs `damaged`. Exit status 1 while damaged
    parts remain in the tables."""
    if run_id is not None:
        try:
            check_name("run id", run_id)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    store = open_store(store_uri)
    result = check_store(store, run_id)
    scope = f"run {run_id}" if run_id else store.root_uri
    if run_id is not None and result.checked == 0:
        raise UsageError(f"no parts of run {run_id!r} in store {store_uri}; list runs with `ratchet runs`")
    if result.ok:
        console.print(f"OK: {result.checked} parts checked in {scope}, none damaged", markup=False, highlight=False)
        return
    console.print(damage_table(result))
    console.print(f"{len(result.damaged)} of {result.checked} parts in {scope} are unreadable", markup=False,
                  highlight=False)
    if not quarantine_parts:
        console.print(f"Move them aside with `ratchet check{f' {run_id}' if run_id else ''} --quarantine`, then "
                      "`ratchet resume RUN_ID` re-derives them.", markup=False, highlight=False)
        raise typer.Exit(1)
    now = datetime.now(UTC)
    for damage in result.damaged:
        target = quarantine(store, damage, now)
        console.print(f"quarantined {damage.part.table}/run_id={damage.part.run_id}/{damage.part.name} -> {target}",
                      markup=False, highlight=False)
    for damaged_run in result.runs():
        parts = [d for d in result.damaged if d.part.run_id == damaged_run]
        if record_damage(store, damaged_run, parts, now) is None:
            console.print(f"run {damaged_run} has no status event left, so it cannot be resumed", markup=False,
                          highlight=False)
        else:
            console.print(f"run {damaged_run} marked damaged: `ratchet resume {damaged_run}` re-derives its "
                          f"{len(parts)} quarantined part{'s' if len(parts) > 1 else ''}", markup=False,
                          highlight=False)


def damage_table(result: CheckResult) -> Table:
    view = Table(title="unreadable parts")
    for column in ("table", "run_id", "stage", "part", "error"):
        view.add_column(column, overflow="fold")
    for damage in result.damaged:
        part = damage.part
        view.add_row(part.table, part.run_id, part.stage, part.name, damage.error)
    return view
