"""One way to write a stage: compute its rows once, publish them as the stage's part,
return them. A stage that ran (or half ran and was killed after publishing) returns what
it published; one that did not computes and publishes. Parts are published atomically
(`TableStore.write_part`), so a retry or `ratchet resume` never sees half a part and never
computes twice what it already holds."""

from __future__ import annotations

import json
from typing import Callable, Sequence

from pydantic import BaseModel

from schemas.ids import derived_id
from schemas.rows import DistillateRow
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


def distillate(ref: RunRef, kind: str, round_index: int, body: dict, *key: object) -> DistillateRow:
    """An active distillate of ``kind`` whose content is ``body`` as sorted JSON; its id
    derives from (run, kind, round, *key), so a rerun of the round writes the same row."""
    return DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, kind, round_index, *key),
                         round=round_index, kind=kind, content=json.dumps(body, sort_keys=True), uri=None,
                         source_execution_ids=[], support=1, status="active")


def distilled(ref: RunRef, kind: str) -> list[dict]:
    """The JSON bodies of the run's distillates of ``kind``, by (round, distillate_id)."""
    rows = [r for r in store_for(ref.store_uri).read_rows("distillates", ref.run_id) if r.kind == kind]
    return [json.loads(r.content) for r in sorted(rows, key=lambda r: (r.round, r.distillate_id))]
