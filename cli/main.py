"""`ratchet`: run and resume gated self-improvement loops, and query what they stored.

Every command reads the store from --store URI, else RATCHET_STORE, else ./.ratchet.
Heavy modules (Prefect, DuckDB, MLflow) load inside the commands, after the
environment is prepared, so `--help` is instant."""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console

from cli.env import prepare_environment, resolve_store

DEFAULT_SUITE = {
    "evolve": "circle_packing", "aide2": "circle_packing+bin_packing",
    "self_healing": "toolsim", "growing_harness": "toolsim", "medrsi": "toolsim", "designer_rsi": "toolsim",
    "grpo": "arith", "ppo_pact": "arith", "opd": "arith", "paired_rollouts": "arith", "harness_bandit": "arith",
}
LOOPS = tuple(DEFAULT_SUITE)

app = typer.Typer(
    help=(
        "Ratchet runs gated self-improvement loops (sample -> execute -> score -> distill -> gate -> register) "
        "as Prefect flows and stores every candidate, case, score and gate decision as Parquet you can query "
        "in SQL.\n\nStart with:  ratchet run evolve --suite circle_packing --budget 64   then   ratchet runs"
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
console = Console()

StoreOption = typer.Option(None, "--store", help="Store URI: a folder or s3://bucket/prefix (env RATCHET_STORE; default ./.ratchet).")


def _store(uri: Optional[str]) -> str:
    store_uri = resolve_store(uri)
    prepare_environment(store_uri)
    return store_uri


@app.command()
def run(
    loop: str = typer.Argument(..., help=f"The loop (a paper's method): {', '.join(LOOPS)}."),
    suite: Optional[str] = typer.Option(None, help="Suite the loop improves on (evolve: circle_packing | bin_packing)."),
    budget: int = typer.Option(32, min=1, help=("evolve: child programs; aide2: outer nodes (agents); grpo, ppo_pact, opd, paired_rollouts, "
                                           "harness_bandit: optimizer steps; self_healing, medrsi, designer_rsi: "
                                           "rounds; growing_harness: repair steps.")),
    seed: int = typer.Option(0, help="Seed of every random choice; same loop, suite, budget and seed = same run."),
    store: Optional[str] = StoreOption,
    workers: int = typer.Option(2, min=1, help="Candidates evaluated at once, each in its own sandbox process."),
    dask: Optional[str] = typer.Option(None, help="Dask scheduler address (tcp://host:8786): evaluate candidates on that cluster."),
    proposer: str = typer.Option("mutate", help="mutate (AST mutation/crossover, offline) or llm (RATCHET_LLM_BASE_URL)."),
    inner_budget: int = typer.Option(16, min=1, help="aide2: evolve's budget per selection suite per node."),
    param: list[str] = typer.Option([], "--param", help="Suite parameter KEY=VALUE, e.g. --param n=26 (repeatable)."),
    timeout: float = typer.Option(10.0, help="Sandbox wall-clock limit per case, seconds."),
    no_tracking: bool = typer.Option(False, "--no-tracking", help="Do not log candidates to MLflow."),
    setting: list[str] = typer.Option([], "--set", help=(
        "Loop parameter SECTION.FIELD=VALUE (repeatable), e.g. --set opd.method=dial, --set grpo.lr=3e-5, "
        "--set heal.accept_all=true, --set grpo.categories=[add,sub]. Sections: evolve, grpo, opd, ppo_pact, "
        "paired_rollouts, harness_bandit, heal, grow, medrsi, designer, sandbox.")),
) -> None:
    """Start a loop run and print its champion."""
    store_uri = _store(store)
    from cli.running import execute_run, make_config

    config = make_config(loop, suite or DEFAULT_SUITE.get(loop, ""), budget, seed, workers, dask, proposer,
                         inner_budget, param, timeout, not no_tracking, setting)
    execute_run(console, store_uri, config, run_id=None)


@app.command()
def resume(run_id: str = typer.Argument(..., help="The run to finish (see `ratchet runs`)."), store: Optional[str] = StoreOption) -> None:
    """Finish a crashed or killed run: completed stages are skipped, the rest re-run with the same seeds."""
    store_uri = _store(store)
    from cli.running import execute_run
    from tasks.runs import stored_config

    execute_run(console, store_uri, stored_config(store_uri, run_id), run_id=run_id)


@app.command()
def runs(store: Optional[str] = StoreOption) -> None:
    """List runs with their latest status."""
    store_uri = _store(store)
    from cli.views import print_query

    print_query(console, store_uri, "SELECT run_id, loop, suite, status, started_at, finished_at "
                                    "FROM runs_current ORDER BY started_at")


@app.command()
def show(run_id: str, store: Optional[str] = StoreOption) -> None:
    """Show one run: status, champion (select vs holdout), candidates and gate decisions."""
    store_uri = _store(store)
    from cli.views import show_run

    show_run(console, store_uri, run_id)


@app.command()
def sql(
    query: str = typer.Argument(..., help="DuckDB SQL over the tables, e.g. \"SELECT decision, count(*) FROM gate_decisions GROUP BY 1\"."),
    store: Optional[str] = StoreOption,
    format: str = typer.Option("table", help="table | csv | json"),
) -> None:
    """Query every table (runs, candidates, cases, executions, scores, steps, distillates,
    gate_decisions, registry, train_steps, nodes) in SQL."""
    store_uri = _store(store)
    from cli.views import print_query

    print_query(console, store_uri, query, format)


@app.command()
def catalog(
    out: Optional[str] = typer.Option(None, help="Where to write the DuckDB file (default <store>/catalog.duckdb)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Write catalog.duckdb: views over the store that any DuckDB client can open."""
    store_uri = _store(store)
    from cli.views import write_catalog_file

    console.print(f"catalog written: {write_catalog_file(store_uri, out)}")


@app.command()
def compact(run_id: str, store: Optional[str] = StoreOption) -> None:
    """Merge a finished run's small Parquet parts into one part per table."""
    store_uri = _store(store)
    from cli.views import compact_run

    compact_run(console, store_uri, run_id)


@app.command()
def report(
    run_id: str,
    out: Optional[str] = typer.Option(None, help="PNG path (default <store>/reports/RUN_ID.png)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Plot a run: every candidate's select score by round with the champion's staircase,
    and each champion's select vs holdout score."""
    store_uri = _store(store)
    from pathlib import Path

    from cli.report import write_report

    console.print(f"report written: {write_report(store_uri, run_id, Path(out) if out else None)}")


@app.command()
def demo(
    store: Optional[str] = StoreOption,
    budget: int = typer.Option(300, help="Child programs evolve evaluates on circle_packing."),
    bin_budget: int = typer.Option(24, help="Child programs evolve evaluates on bin_packing."),
) -> None:
    """The quick start: evolve on circle_packing and a short bin_packing run, then where
    to look (data, SQL, MLflow and Prefect UIs)."""
    store_uri = _store(store)
    from cli.demo import run_demo

    run_demo(console, store_uri, budget, bin_budget)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

