"""score: judge every execution with the suite's trusted scorer, in this process.

The sandbox only reports what the candidate returned; the verdict is computed here,
outside the candidate's reach, and every row carries the scorer's version hash."""

from __future__ import annotations

import json
from typing import Sequence

from prefect import task

from schemas.rows import ExecutionRow, ScoreRow
from suites.base import Case, Suite, Verdict
from tasks.runtime.context import RunRef, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key


def blob_id(uri: str) -> str:
    """The sha256 at the end of a blob URI (local path or s3://.../blobs/<sha>)."""
    return uri.rsplit("/", 1)[-1]


def verdict_for(suite: Suite, case: Case, execution: ExecutionRow, output: object) -> Verdict:
    """A failed execution scores the suite's floor, with the failure as the reason."""
    if execution.status != "ok":
        floor = suite.score(case, None)
        reason = execution.status + (f": {execution.error}" if execution.error else "")
        return Verdict(valid=False, metrics=floor.metrics, reason=reason)
    return suite.score(case, output)


def score_rows(
    ref: RunRef, suite: Suite, execution: ExecutionRow, case: Case, verdict: Verdict, version: str | None = None
) -> list[ScoreRow]:
    """The verdict's metrics as rows; `version` is the suite's scorer version (computed
    here when not given: callers scoring many executions pass it once)."""
    version = version if version is not None else suite.scorer_version()
    return [
        ScoreRow(
            run_id=ref.run_id, execution_id=execution.execution_id, candidate_id=execution.candidate_id,
            case_id=execution.case_id, split=execution.split, scorer=suite.name, scorer_version=version,
            metric=metric, value=float(value), valid=verdict.valid, reason=verdict.reason,
        )
        for metric, value in sorted(verdict.metrics.items())
    ]


def score_candidates(ref: RunRef, stage_tag: str, candidate_ids: Sequence[str], suite: Suite | None = None) -> None:
    """Score the executions published under `stage_tag` for these candidates (idempotent);
    `suite` (default: the run's) is the one whose cases they ran."""
    once(ref, "scores", "score", stage_tag, lambda: verdict_rows(ref, stage_tag, candidate_ids, suite))


def verdict_rows(ref: RunRef, stage_tag: str, candidate_ids: Sequence[str], suite: Suite | None = None) -> list[ScoreRow]:
    """The trusted scorer's rows for every execution published under `stage_tag`."""
    store, suite = store_for(ref.store_uri), suite or run_suite(ref)
    cases = {c.case_id: c for c in suite.cases()}
    version = suite.scorer_version()
    rows: list[ScoreRow] = []
    for candidate_id in candidate_ids:
        for execution in store.read_part("executions", ref.run_id, "execute", part_key(stage_tag, candidate_id)):
            output = json.loads(store.get_blob(blob_id(execution.output_uri))) if execution.output_uri else None
            verdict = verdict_for(suite, cases[execution.case_id], execution, output)
            rows.extend(score_rows(ref, suite, execution, cases[execution.case_id], verdict, version))
    return rows


@task(name="score", **STAGE_OPTIONS)
def score(ref: RunRef, round_index: int, candidate_ids: list[str]) -> list[str]:
    score_candidates(ref, f"r{round_index:04d}", candidate_ids)
    return candidate_ids
