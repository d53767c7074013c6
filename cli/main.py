"""`ratchet`: run and resume gated self-improvement loops, and query what they stored.

Every command reads the store from --store URI, else RATCHET_STORE, else ./.ratchet.
Heavy modules (Prefect, DuckDB, MLflow) load inside the commands, after the
environment is prepared, so `--help` is instant."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer
from rich.console import Console

from cli.env import prepare_environment, resolve_store
from cli.errors import DEBUG, UsageError, friendly
from schemas.loops import LOOP_SPECS

LOOPS = tuple(LOOP_SPECS)


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


app = typer.Typer(
    help=(
        "Ratchet runs gated self-improvement loops (sample -> execute -> score -> distill -> gate -> register) "
        "as Prefect flows and stores every candidate, case, score and gate decision as Parquet you can query "
        "in SQL.\n\nStart with:  ratchet loops   then   ratchet run evolve --budget 64   then   ratchet runs"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()


def command(*args, **kwargs):
    """`app.command` whose errors are one line and an exit code (cli.errors)."""
    def register(function):
        return app.command(*args, **kwargs)(friendly(function))
    return register


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error.")) -> None:
    if debug:
        DEBUG["on"] = True


StoreOption = typer.Option(None, "--store", help="Store URI: a folder or s3://bucket/prefix (env RATCHET_STORE; default ./.ratchet).")


def _store(uri: Optional[str], must_exist: bool = False) -> str:
    try:
        store_uri = resolve_store(uri, must_exist=must_exist)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    prepare_environment(store_uri)
    return store_uri


@command()
def run(
    loop: str = typer.Argument(..., help=f"The loop (a paper's method): {', '.join(LOOPS)}. See `ratchet loops`."),
    suite: Optional[str] = typer.Option(None, help="Suite the loop improves on (default: the loop's own; see `ratchet loops`)."),
    budget: Optional[int] = typer.Option(None, min=1, help="How much work the run may do, in the loop's unit (evolve: child "
                                         "programs, grpo: optimizer steps, ...); default: the loop's own. See `ratchet loops`."),
    seed: int = typer.Option(0, help="Seed of every random choice; same loop, suite, budget and seed = same run."),
    store: Optional[str] = StoreOption,
    workers: int = typer.Option(2, min=1, help="Candidates evaluated at once, each in its own sandbox process."),
    dask: Optional[str] = typer.Option(None, help="Dask scheduler address (tcp://host:8786): evaluate candidates on "
                                       "that cluster; training chunks run on its workers started with --resources GPU=1."),
    proposer: str = typer.Option("mutate", help="mutate (AST mutation/crossover or the rule proposer, offline), grammar "
                                 "(offline structure search with TPE on constants, --set evolve.tune_rate: bin packing "
                                 "expressions of item/bins/gap, circle packing layouts and polishes) or llm "
                                 "(an OpenAI-compatible endpoint from RATCHET_LLM_BASE_URL)."),
    inner_budget: int = typer.Option(16, min=1, help="aide2: evolve's budget per selection suite per node."),
    param: list[str] = typer.Option([], "--param", help="Suite parameter KEY=VALUE, e.g. --param n=26 (repeatable)."),
    timeout: Optional[float] = typer.Option(None, min=0.001, help="Sandbox limit per case, seconds (default 10; "
                                            "same as --set sandbox.timeout_s=SECONDS)."),
    no_tracking: bool = typer.Option(False, "--no-tracking", help="Do not log candidates to MLflow."),
    start_from: str = typer.Option("seed", "--start-from", help="seed (round 0 is the suite's seed program) or champion "
                                   "(round 0 re-scores the store's current champion of this suite and loop, so the run "
                                   "continues from the last one; evolve and the harness loops)."),
    setting: list[str] = typer.Option([], "--set", help=(
        "Loop parameter SECTION.FIELD=VALUE (repeatable), e.g. --set opd.method=dial, --set grpo.lr=3e-5, "
        "--set heal.accept_all=true, --set grpo.categories=\\[add,sub]. Sections: evolve, grpo, opd, ppo_pact, "
        "paired_rollouts, harness_bandit, heal, grow, medrsi, designer, sandbox; a wrong field lists the valid ones.")),
    max_llm_tokens: Optional[int] = typer.Option(None, "--max-llm-tokens", min=1, help=(
        "Budget cap: begin no new round once the run's LLM tokens (in + out) reach N; the run ends "
        "`budget_exhausted` with its champion registered (evolve, self_healing; --proposer llm only).")),
    max_evaluations: Optional[int] = typer.Option(None, "--max-evaluations", min=1, help=(
        "Budget cap: begin no new round once the run has made N evaluations (candidate x case executions); "
        "a round once begun runs to its end. `ratchet resume RUN_ID --max-evaluations M` raises it "
        "(evolve, self_healing).")),
) -> None:
    """Start a loop run and print its champion. Every input is checked before any work;
    Ctrl-C stops the run and prints the `ratchet resume RUN_ID` that finishes it."""
    store_uri = _store(store)
    from cli.running import execute_run, make_config

    config = make_config(loop, suite, budget, seed, workers, dask, proposer, inner_budget, param, timeout,
                         not no_tracking, setting, start_from,
                         caps={"max_llm_tokens": max_llm_tokens, "max_evaluations": max_evaluations})
    execute_run(console, store_uri, config, run_id=None)


@command()
def resume(
    run_id: str = typer.Argument(..., help="The run to finish (see `ratchet runs`)."),
    store: Optional[str] = StoreOption,
    max_llm_tokens: Optional[int] = typer.Option(None, "--max-llm-tokens", min=1, help=(
        "Raise the run's LLM-token cap to N (higher than its current cap) and continue it.")),
    max_evaluations: Optional[int] = typer.Option(None, "--max-evaluations", min=1, help=(
        "Raise the run's evaluation cap to N (higher than its current cap) and continue it; e.g. a run that "
        "stopped `budget_exhausted` at 40 evaluations goes on with --max-evaluations 80.")),
) -> None:
    """Finish a crashed, failed, interrupted or damaged run: completed stages are skipped,
    the rest re-run with the same seeds. A finished run is left as it is. A run that a
    budget cap stopped (`budget_exhausted`) continues only with a raised cap
    (--max-evaluations / --max-llm-tokens), into the rows a run started with that cap makes."""
    store_uri = _store(store, must_exist=True)
    from cli.running import execute_run, resumable_config

    raised = {k: v for k, v in (("max_llm_tokens", max_llm_tokens), ("max_evaluations", max_evaluations)) if v}
    config = resumable_config(console, store_uri, run_id, raised)
    if config is not None:
        execute_run(console, store_uri, config, run_id=run_id)


@command()
def runs(store: Optional[str] = StoreOption) -> None:
    """List runs with their latest status."""
    store_uri = _store(store, must_exist=True)
    from cli.views import print_query

    print_query(console, store_uri, "SELECT run_id, loop, suite, status, started_at, finished_at "
                                    "FROM runs_current ORDER BY started_at")


@command()
def show(run_id: str, store: Optional[str] = StoreOption) -> None:
    """Show one run: status, champion (select vs holdout), candidates and gate decisions."""
    store_uri = _store(store, must_exist=True)
    from cli.views import show_run

    show_run(console, store_uri, run_id)


@command()
def sql(
    query: str = typer.Argument(..., help="DuckDB SQL over the tables, e.g. \"SELECT decision, count(*) FROM gate_decisions GROUP BY 1\"."),
    store: Optional[str] = StoreOption,
    format: OutputFormat = typer.Option(OutputFormat.table, help="How to print the result."),
) -> None:
    """Query every table (runs, candidates, cases, executions, scores, steps, distillates,
    gate_decisions, registry, train_steps, nodes) in SQL."""
    store_uri = _store(store, must_exist=True)
    from cli.views import print_query

    print_query(console, store_uri, query, format.value)


@command()
def audit(
    store: Optional[str] = StoreOption,
    format: OutputFormat = typer.Option(OutputFormat.table, help="How to print the tables."),
) -> None:
    """Classify every run in the store (GAI): is the improver inside the agent (RSI) or a
    fixed updater (GPI); is progress anchored to a scorer the run cannot change; each
    run's components and what may change them; the champions' internal (select) vs
    external (holdout) gap; runs whose held-out split was read by selection are flagged.

    Example: `ratchet audit --format json`. `ratchet run gai` stores the same manifest as
    tables (gai_components, gai_versions, gai_classification) to query in `ratchet sql`."""
    store_uri = _store(store, must_exist=True)
    from cli.audit import print_audit

    print_audit(console, store_uri, format.value)


@command()
def rescore(run_id: str = typer.Argument(..., help="The run whose stored outputs to score again."),
            scorer_version: Optional[str] = typer.Option(
                None, "--scorer-version", help="The scorer version to rescore under: for trace runs a grader-set "
                "version (default the latest); for other runs it must be the installed scorer's."),
            store: Optional[str] = StoreOption) -> None:
    """Score a run's stored outputs again under the installed scorer, without re-running
    any candidate (after a grader fix: did the score change because of the behaviour or the
    ruler?). New rows sit beside the old ones in `scores`, told apart by scorer_version;
    the run's gate decisions keep the anchored version."""
    store_uri = _store(store, must_exist=True)
    from cli.rescore import print_rescore

    print_rescore(console, store_uri, run_id, scorer_version)


@command()
def replay(
    runs: list[str] = typer.Argument(..., help="Runs whose recorded search trees to replay (evolve, dream_rsi)."),
    ucb_c: float = typer.Option(1.0, "--ucb-c", help="The policy's UCB exploration constant (0: always the best node)."),
    width: int = typer.Option(8, help="Children the policy opens per expansion batch."),
    patience: int = typer.Option(3, help="Batches without a new best before the policy stops."),
    store: Optional[str] = StoreOption,
) -> None:
    """Rehearse a search-scheduling policy on recorded search trees, evaluating nothing:
    the policy may reorder recorded nodes, and a child the tree never had is
    "unavailable" (counted). Prints per tree what the policy found, after how many
    attempts and batches, and its replay cost (the share of the tree's attempts spent
    until the tree's best; above 1 when it stopped short). dream_rsi's dreams do this."""
    store_uri = _store(store, must_exist=True)
    from cli.replay import print_replay

    print_replay(console, store_uri, runs, ucb_c, width, patience)


@command()
def catalog(
    out: Optional[str] = typer.Option(None, help="Where to write the DuckDB file (default <store>/catalog.duckdb)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Write catalog.duckdb: views over the store that any DuckDB client can open."""
    store_uri = _store(store, must_exist=True)
    from cli.views import write_catalog_file

    console.print(f"catalog written: {write_catalog_file(store_uri, out)}")


@command()
def compact(run_id: str, store: Optional[str] = StoreOption) -> None:
    """Merge a finished run's small Parquet parts into one part per table."""
    store_uri = _store(store, must_exist=True)
    from cli.views import compact_run

    compact_run(console, store_uri, run_id)


@command()
def report(
    run_id: str,
    out: Optional[str] = typer.Option(None, help="PNG path (default <store>/reports/RUN_ID.png)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Plot a run as a PNG: program search shows scores by round with the champion's
    staircase, harness loops success per round and accepted vs rejected edits, training
    loops loss and select accuracy per chunk against the warm start."""
    store_uri = _store(store, must_exist=True)
    from pathlib import Path

    from cli.report import write_report

    console.print(f"report written: {write_report(store_uri, run_id, Path(out) if out else None)}")


@command()
def check(
    run_id: Optional[str] = typer.Argument(None, help="Check only this run's parts (default: every run)."),
    quarantine: bool = typer.Option(False, "--quarantine", help="Move each unreadable part aside (under <store>/quarantine) "
                                    "so queries work again; `ratchet resume RUN_ID` then re-derives it."),
    store: Optional[str] = StoreOption,
) -> None:
    """Read every Parquet part of the store (or of one run) and name each unreadable one
    with its table, run and stage."""
    store_uri = _store(store, must_exist=True)
    from cli.check import run_check

    run_check(console, store_uri, run_id, quarantine)


@command()
def demo(
    store: Optional[str] = StoreOption,
    budget: int = typer.Option(96, help="Child programs evolve evaluates on circle_packing."),
    bin_budget: int = typer.Option(24, help="Child programs evolve evaluates on bin_packing."),
) -> None:
    """The quick start: evolve with the grammar proposer (no LLM) on circle_packing and a
    short bin_packing run, then where to look (data, SQL, MLflow and Prefect UIs)."""
    store_uri = _store(store)
    from cli.demo import run_demo

    run_demo(console, store_uri, budget, bin_budget)


@command()
def loops() -> None:
    """One line per loop: its paper, what it modifies, its suites, what --budget counts."""
    from cli.catalogs import print_loops

    print_loops(console)


@command()
def suites() -> None:
    """One line per suite: cases per split, what a candidate is, what it is measured against."""
    from cli.catalogs import print_suites

    print_suites(console)


def _register_llm() -> None:
    from cli.llm import app as llm_app

    app.add_typer(llm_app, name="llm")


_register_llm()


def main() -> None:
    app()


if __name__ == "__main__":
    main()

