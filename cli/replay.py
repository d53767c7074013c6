"""`ratchet replay RUN...`: a scheduling policy rehearsed on the runs' recorded search
trees (tasks.search.schedule), nothing evaluated."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def print_replay(console: Console, store_uri: str, runs: list[str], ucb_c: float, width: int, patience: int) -> None:
    from cli.errors import UsageError
    from storage.store import open_store
    from suites import get_suite
    from tasks.search.schedule import Policy, rehearse
    from tasks.search.trees import run_trees

    try:
        policy = Policy(ucb_c, width, patience)
    except ValueError as exc:
        raise UsageError(f"{exc}; e.g. --ucb-c 0.5 --width 4 --patience 4") from None
    store = open_store(store_uri)
    known = set(store.run_ids("runs"))
    trees = []
    for run_id in runs:
        if run_id not in known:
            raise UsageError(f"no run {run_id!r} in the store; list runs with `ratchet runs`")
        suite = store.read_rows("runs", run_id)[0].suite
        found = run_trees(store, run_id, get_suite(suite.split("+")[0]).primary_metric)
        if not found:
            raise UsageError(f"run {run_id!r} recorded no scored search tree (no scored round-0 candidate)")
        trees.extend(found)
    rehearsal = rehearse(policy, trees)
    table = Table(title=f"policy ucb_c={ucb_c:g} width={width} patience={patience}")
    for column in ("tree", "nodes", "tree best", "found", "attempts", "batches", "unavailable", "replay cost"):
        table.add_column(column, justify="left" if column == "tree" else "right", overflow="fold")
    for tree, e in zip(trees, rehearsal.evals):
        table.add_row(e.tree_id, str(len(tree.nodes)), f"{tree.best:.6g}", f"{e.best_found:.6g}", str(e.attempts),
                      str(e.latency), str(e.unrecorded_requests), f"{e.cost:.4f}")
    console.print(table)
    console.print(f"mean replay cost {rehearsal.score:.4f} over {len(trees)} trees (lower is better)")
