"""The artifact CodeMidas improves: the environment set, a JSON document whose sha256 is
its candidate id. It holds every accepted environment (spec, stub, reference, tests
with their split) and every candidate id already built (accepted or not), so a run
that starts from the registered set builds the next candidates of the pool. Pure."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.loops.codemidas.filters import split_of

EMPTY: dict[str, Any] = {"environments": [], "seen": []}


def environment(built: Any) -> dict[str, Any]:
    """One accepted environment's document (from a `suites.codemidas.build.Built`)."""
    return {"task_id": built.task_id, "module": built.module, "module_sha256": built.module_sha256,
            "name": built.name, "spec": built.spec, "stub": built.stub, "reference": built.reference,
            "kinds": list(built.kinds),
            "tests": [{**t, "split": split_of(i)} for i, t in enumerate(built.tests)]}


def dump(envset: Mapping[str, Any]) -> str:
    """The canonical text of a set (its candidate id is this text's sha256)."""
    return json.dumps(envset, sort_keys=True, separators=(",", ":"))


def set_id(envset: Mapping[str, Any]) -> str:
    return content_id(dump(envset))


def merged(previous: Mapping[str, Any], accepted: Sequence[Mapping[str, Any]], built_ids: Sequence[str]) -> dict:
    """``previous`` plus the newly accepted environments and built candidate ids (an
    environment already in the set is not added twice), sorted by id."""
    environments = {e["task_id"]: e for e in previous["environments"]}
    environments.update({e["task_id"]: dict(e) for e in accepted if e["task_id"] not in environments})
    return {"environments": [environments[k] for k in sorted(environments)],
            "seen": sorted(set(previous["seen"]) | set(built_ids))}


def next_candidates(pool: Sequence[str], seen: Sequence[str], count: int) -> list[str]:
    """The first ``count`` candidate ids of the pool not built yet, in pool order."""
    done = set(seen)
    return [c for c in pool if c not in done][:count]
