"""Where a run starts: the suite's seed program, or (``start_from="champion"``) the
current champion of the run's registry name in the store, so that a scheduled flow
continues from last night's champion instead of re-seeding.

Registry names (``suite/loop``) are global to a store. The start point is decided once,
at the run's first start, and recorded in its ``runs`` rows: a resume starts from the
same point even if another run registered a champion since. Round 0 re-scores the
start candidate under the run's own anchored scorer; when that scorer differs from the
one the champion was registered under, the round-0 decision says so (a re-baseline)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Sequence

from pydantic import BaseModel, ConfigDict

from schemas.configs import RunConfig
from schemas.rows import RegistryRow
from storage.store import TableStore
from tasks.runtime.context import RunRef, anchored_scorer_version, first_start, store_for

CHAMPION = "champion"
"""The registry alias a run's current best candidate holds."""


class StartPoint(BaseModel):
    """The champion a run continues from: which candidate, registered by which run,
    with which select score under which scorer."""

    model_config = ConfigDict(frozen=True)
    candidate_id: str
    run_id: str
    decision_id: str
    select_score: float | None
    scorer_version: str


def registry_name(config: RunConfig) -> str:
    """The registry name a run's champions are registered under: global to the store."""
    return f"{config.suite}/{config.loop}"


def latest_champion(registry: Sequence[RegistryRow], name: str, exclude_run_id: str) -> RegistryRow | None:
    """The most recent champion event under ``name`` of any run but ``exclude_run_id``."""
    held = [r for r in registry if r.name == name and r.alias == CHAMPION and r.run_id != exclude_run_id]
    return max(held, key=lambda r: (r.event_at, r.version)) if held else None


def resolve_start(store: TableStore, config: RunConfig, run_id: str) -> StartPoint | None:
    """The start point of a new run: None (the seed) unless the config asks for the
    champion and the store holds one under the run's registry name."""
    if config.start_from == "seed":
        return None
    champion = latest_champion(store.read_rows("registry"), registry_name(config), run_id)
    if champion is None:  # the first run of this registry name in the store starts from the seed
        return None
    return StartPoint(candidate_id=champion.candidate_id, run_id=champion.run_id, decision_id=champion.decision_id,
                      select_score=champion.select_score, scorer_version=json.loads(first_start(store, champion.run_id).config_json)["scorer_version"])


def recorded_start(config_json: str) -> StartPoint | None:
    """The start point stored in a run's first `running` event."""
    start = json.loads(config_json).get("start")
    return StartPoint.model_validate(start) if start else None


def start_note(start: StartPoint, anchored: str) -> str:
    """What round 0's candidate is, for its summary and its decision's reason."""
    note = f"the champion {start.candidate_id[:12]} of run {start.run_id}"
    if start.scorer_version != anchored:
        return (f"re-baseline: {note}, registered under scorer {start.scorer_version}, re-scored under this "
                f"run's scorer {anchored} (its earlier select score {start.select_score} is not compared)")
    return f"{note} (select score {start.select_score}), re-scored under the same scorer {anchored}"


@lru_cache(maxsize=64)
def run_start(ref: RunRef) -> StartPoint | None:
    """The start point recorded at the run's first start (None: the suite's seed)."""
    return recorded_start(first_start(store_for(ref.store_uri), ref.run_id).config_json)


def round0_program(ref: RunRef, seed_program: str, seed_summary: str) -> tuple[bytes, str]:
    """Round 0's program and its summary: the suite's seed, or the recorded champion
    (read from the store's blobs: registry names, and so blobs, are global to a store)."""
    start = run_start(ref)
    if start is None:
        return seed_program.encode(), seed_summary
    return store_for(ref.store_uri).get_blob(start.candidate_id), start_note(start, anchored_scorer_version(ref))
