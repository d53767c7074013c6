"""execute: run candidates on cases in the sandbox and record every attempt.

One Prefect task per round; inside it the (candidate × cases) work fans out itself,
one sandbox process per candidate evaluating its whole batch of cases: threads locally,
Dask futures on a cluster. Each candidate's executions are published as their own part
as soon as it finishes, so a killed run loses at most the candidates in flight."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from prefect import task

from schemas.configs import SandboxConfig
from schemas.ids import derived_id
from schemas.rows import ExecutionRow
from suites.base import Case, CaseResult, Suite
from suites.executors import make_executor
from tasks.runtime.context import RunRef, cases_by_split, dask_address, run_config, run_suite, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS


def evaluate_program(
    program: str, runner: str, entrypoint: str, cases: Sequence[Case], sandbox: SandboxConfig
) -> list[CaseResult]:
    """Run one candidate on its cases. Module-level so Dask can ship it to workers. The
    next candidate's sandbox starts while this one runs (``suites/executors/warm.py``)."""
    return make_executor(sandbox, prestart=True).run(program, runner, entrypoint, cases)


def execution_rows(
    ref: RunRef, candidate_id: str, cases: Sequence[Case], results: Sequence[CaseResult], seed: int, output_uris: Sequence[str | None]
) -> list[ExecutionRow]:
    """Executions of one candidate, ids derived from (run, candidate, case, seed, attempt)."""
    return [
        ExecutionRow(
            run_id=ref.run_id,
            execution_id=derived_id(ref.run_id, candidate_id, case.case_id, seed, 0),
            candidate_id=candidate_id, case_id=case.case_id, split=case.split, seed=seed, noise_key=None,
            attempt=0, status=result.status, error=result.error, wall_s=result.wall_s, cpu_s=result.cpu_s,
            peak_rss_mb=result.peak_rss_mb, tokens_in=None, tokens_out=None, cost_usd=None,
            output_uri=uri, trajectory_uri=None,
        )
        for case, result, uri in zip(cases, results, output_uris, strict=True)
    ]


def part_key(stage_tag: str, candidate_id: str) -> str:
    return f"{stage_tag}-{candidate_id[:20]}"


def _publish(ref: RunRef, stage_tag: str, candidate_id: str, cases, results, seed: int) -> None:
    store = store_for(ref.store_uri)
    uris = [
        store.blob_uri(store.put_blob(json.dumps(r.output, sort_keys=True).encode())) if r.status == "ok" else None
        for r in results
    ]
    rows = execution_rows(ref, candidate_id, cases, results, seed, uris)
    store.write_part("executions", ref.run_id, "execute", part_key(stage_tag, candidate_id), rows)


def run_candidates(ref: RunRef, stage_tag: str, candidate_ids: Sequence[str], cases: Sequence[Case],
                   seed: int | None = None, suite: Suite | None = None) -> None:
    """Evaluate each pending candidate on `cases` and publish its executions (idempotent).
    `seed` (default: the run's) is the executions' seed column and part of their ids, so
    one case run under several noise seeds gives distinct executions. `suite` (default:
    the run's) runs the cases: a run over several suites (algoevo's tasks) names each."""
    store, config = store_for(ref.store_uri), run_config(ref)
    suite = suite or run_suite(ref)
    pending = [
        c for c in candidate_ids
        if not store.has_part("executions", ref.run_id, "execute", part_key(stage_tag, c))
    ]
    if not pending or not cases:
        return
    runner, entry = suite.runner_source(), suite.entrypoint
    programs = {c: store.get_blob(c).decode() for c in pending}
    seed = config.seed if seed is None else seed
    if dask_address(config):
        _run_on_dask(ref, stage_tag, pending, programs, runner, entry, cases, config, seed)
        return
    with ThreadPoolExecutor(max_workers=config.workers) as pool:
        futures = {
            c: pool.submit(evaluate_program, programs[c], runner, entry, cases, config.sandbox) for c in pending
        }
        for candidate_id, future in futures.items():
            _publish(ref, stage_tag, candidate_id, cases, future.result(), seed)
            crash_point("execute", stage_tag)


def _run_on_dask(ref, stage_tag, pending, programs, runner, entry, cases, config, seed: int) -> None:
    from distributed import Client, as_completed

    with Client(dask_address(config), timeout="30s") as client:
        futures = client.map(
            evaluate_program, [programs[c] for c in pending], runner=runner, entrypoint=entry,
            cases=list(cases), sandbox=config.sandbox, pure=False,
        )
        by_future = dict(zip(futures, pending))
        for future in as_completed(futures):
            _publish(ref, stage_tag, by_future[future], cases, future.result(), seed)


@task(name="execute", **STAGE_OPTIONS)
def execute(ref: RunRef, round_index: int, candidate_ids: list[str]) -> list[str]:
    """Run the round's candidates on the train and select cases."""
    cases = cases_by_split(run_suite(ref), "train", "select")
    run_candidates(ref, f"r{round_index:04d}", candidate_ids, cases)
    reporter().advance(len(candidate_ids), f"round {round_index}")
    return candidate_ids
