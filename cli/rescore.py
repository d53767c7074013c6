"""`ratchet rescore RUN_ID`: the run's stored outputs scored again by the installed
scorer, and what changed (tasks.stages.rescore)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console


def print_rescore(console: Console, store_uri: str, run_id: str, scorer_version: str | None = None) -> None:
    from cli.errors import UsageError
    from storage.store import open_store
    from tasks.runtime.context import RunRef, run_config
    from tasks.stages.rescore import rescore_run

    if run_id not in open_store(store_uri).run_ids("runs"):
        raise UsageError(f"no run {run_id!r} in the store; list runs with `ratchet runs`")
    ref = RunRef(store_uri=store_uri, run_id=run_id)
    if run_config(ref).loop == "trace":
        return _print_trace(console, ref, scorer_version)
    try:
        found = rescore_run(ref, scorer_version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if found.version == found.anchored:
        console.print(f"run {run_id} is scored by the installed scorer already (version {found.version}); "
                      "nothing to rescore")
        return
    console.print(f"run {run_id}: {found.rows} score rows under scorer {found.version} beside the anchored "
                  f"{found.anchored} (its gate decisions stay as they were)")
    by_split = Counter(change.split for change in found.changes)
    if not found.changes:
        console.print("no execution's primary score changed: the ruler moved nothing here")
        return
    console.print(f"{len(found.changes)} executions changed their primary score: "
                  + ", ".join(f"{n} on {split}" for split, n in sorted(by_split.items())))
    for change in found.changes[:10]:
        console.print(f"  {change.case_id} ({change.split}) candidate {change.candidate_id[:12]}: "
                      f"{change.before:.6g} -> {change.after:.6g}")
    console.print("compare them in SQL: SELECT scorer_version, split, avg(value) FROM scores "
                  f"WHERE run_id = '{run_id}' GROUP BY ALL")


def _print_trace(console: Console, ref, scorer_version: str | None) -> None:
    """A trace run: its stored trajectories regraded under grader-set ``scorer_version``."""
    from cli.errors import UsageError
    from tasks.loops.trace.evidence import GRADERS
    from tasks.loops.trace.stages import rescore_run

    version = scorer_version or max(v for vs in GRADERS.values() for v in vs)
    try:
        rows, existed, changed = rescore_run(ref, version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    state = "already there, nothing written" if existed else "written beside the native v1 rows"
    console.print(f"run {ref.run_id}: {len(rows)} score rows of the stored trajectories under grader set "
                  f"v{version} ({state}); no trajectory re-ran")
    console.print(f"{len(changed)} (execution, grader) rewards differ from v1")
    console.print("compare them in SQL: SELECT scorer_version, metric, avg(value) FROM scores "
                  f"WHERE run_id = '{ref.run_id}' GROUP BY ALL")
