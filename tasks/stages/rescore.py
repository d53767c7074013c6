"""rescore: score a stored run's executions again under the installed scorer, without
re-running any candidate (TRACE: when a score changes, was it the behaviour or the
ruler?). The outputs the sandbox returned are in the store; the suite's trusted scorer
reads them again. New rows go to the `scores` table beside the old ones, in a part of
their own per scorer version (so a second call writes nothing), told apart by
``scorer_version``; gates keep weighing only the run's anchored version, so a rescore
never changes what was admitted. Only loops whose scores are the suite's verdict on an
execution's output can be rescored (program search and the harness loops)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from schemas.loops import LOOP_SPECS
from schemas.rows import ScoreRow
from tasks.runtime.context import RunRef, anchored_scorer_version, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.stages.score import blob_id, score_rows, verdict_for

RESCORABLE = ("search", "harness")


@dataclass(frozen=True)
class Change:
    execution_id: str
    candidate_id: str
    case_id: str
    split: str
    before: float
    after: float


@dataclass(frozen=True)
class Rescore:
    anchored: str
    version: str
    rows: int
    """Score rows under ``version`` (0 when it is the anchored one: nothing to do)."""
    changes: list[Change]
    """Executions whose primary metric differs between the two versions."""


def rescore_run(ref: RunRef, wanted: str | None = None) -> Rescore:
    """Rescore the run under the installed suite's scorer (ValueError naming why a run
    cannot be rescored, or that ``wanted`` is not the installed scorer's version: only
    the installed scorer can read the outputs again)."""
    config = run_config(ref)
    family = LOOP_SPECS[config.loop].family
    if family not in RESCORABLE:
        raise ValueError(f"{config.loop} runs cannot be rescored: its scores are not a suite's verdict on stored "
                         f"outputs (rescorable families: {', '.join(RESCORABLE)})")
    suite, anchored = run_suite(ref), anchored_scorer_version(ref)
    version = suite.scorer_version()
    if wanted is not None and wanted != version:
        raise ValueError(f"scorer version {wanted} is not installed; the installed {run_suite(ref).name} scorer is "
                         f"{version} (the run is anchored to {anchored})")
    if version == anchored:
        return Rescore(anchored, version, 0, [])
    rows = once(ref, "scores", "rescore", version, lambda: _rows(ref, suite, version))
    return Rescore(anchored, version, len(rows), _changes(ref, suite.primary_metric, anchored, rows))


def _rows(ref: RunRef, suite, version: str) -> list[ScoreRow]:
    store = store_for(ref.store_uri)
    cases = {c.case_id: c for c in suite.cases()}
    out: list[ScoreRow] = []
    for execution in sorted(store.read_rows("executions", ref.run_id), key=lambda e: e.execution_id):
        output = json.loads(store.get_blob(blob_id(execution.output_uri))) if execution.output_uri else None
        case = cases[execution.case_id]
        out.extend(score_rows(ref, suite, execution, case, verdict_for(suite, case, execution, output), version))
    return out


def _changes(ref: RunRef, metric: str, anchored: str, rescored: list[ScoreRow]) -> list[Change]:
    before = {(r.execution_id, r.metric): r.value for r in store_for(ref.store_uri).read_rows("scores", ref.run_id)
              if r.scorer_version == anchored}
    return [Change(r.execution_id, r.candidate_id, r.case_id, r.split, before[(r.execution_id, metric)], r.value)
            for r in rescored if r.metric == metric and (r.execution_id, metric) in before
            and before[(r.execution_id, metric)] != r.value]
