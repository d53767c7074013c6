"""One way to write a stage: compute its rows once, publish them as the stage's part,
return them. A stage that ran (or half ran and was killed after publishing) returns what
it published; one that did not computes and publishes. Parts are published atomically
(`TableStore.write_part`), so a retry or `ratchet resume` never sees half a part and never
computes twice what it already holds."""

from __future__ import annotations

from typing import Callable, Sequence

from pydantic import BaseModel

from tasks.runtime.context import RunRef, store_for


def once(ref: RunRef, table: str, stage: str, key: str,
         compute: Callable[[], Sequence[BaseModel]]) -> list[BaseModel]:
    """The rows of part `stage`/`key` of `table` in the run: read when published, else
    `compute()`d, published and returned as computed (possibly none: "done, nothing")."""
    store = store_for(ref.store_uri)
    if store.has_part(table, ref.run_id, stage, key):
        return store.read_part(table, ref.run_id, stage, key)
    rows = list(compute())
    store.write_part(table, ref.run_id, stage, key, rows)
    return rows
