"""`ratchet demo`: the quick start on the embedded default (local store, SQLite MLflow,
ephemeral Prefect)."""

from __future__ import annotations

from rich.console import Console

from cli.running import execute_run
from cli.views import render
from schemas.configs import RunConfig, SandboxConfig
from storage.catalog import sql
from storage.store import open_store

DEMO_TIMEOUT_S = 2.0
"""Both suites evaluate a case in well under a second; a mutant that loops forever is
cut off after this."""

PROPOSER = "grammar"
"""The demo's proposer: structure search with TPE on constants, offline (README, "Proposers")."""

PUBLISHED = {"circle_packing": ("AlphaEvolve n=26 sum of radii", 2.6359830849)}

EXAMPLE_QUERIES = (
    "SELECT c.operator, g.decision, count(*) FROM gate_decisions g JOIN candidates c USING (run_id, candidate_id) GROUP BY ALL ORDER BY ALL",
    "SELECT run_id, version, select_score, holdout_score FROM registry ORDER BY run_id, version",
    "SELECT status, count(*) AS n, round(avg(wall_s), 3) AS mean_wall_s FROM executions GROUP BY status",
)


HOLDOUT_EXCESS = """
WITH per_case AS (
  SELECT s.candidate_id, split_part(s.case_id, '/', 1) AS dataset,
         max(CASE WHEN metric = 'bins' THEN value END) AS bins,
         max(CASE WHEN metric = 'l1_bound' THEN value END) AS l1
  FROM scores s WHERE s.run_id = '{run}' AND s.split = 'holdout' GROUP BY ALL)
SELECT dataset,
       round(100 * (avg(bins) FILTER (WHERE r.version = 1) / avg(l1) FILTER (WHERE r.version = 1) - 1), 3) AS best_fit,
       round(100 * (avg(bins) FILTER (WHERE r.version = v.last) / avg(l1) FILTER (WHERE r.version = v.last) - 1), 3)
         AS champion
FROM per_case JOIN registry r ON r.candidate_id = per_case.candidate_id AND r.run_id = '{run}'
CROSS JOIN (SELECT max(version) AS last FROM registry WHERE run_id = '{run}') v
GROUP BY dataset ORDER BY dataset
"""


def holdout_excess(store_uri: str, run_id: str):
    """Per-dataset FunSearch-style excess on the holdout instances: the seed (best fit,
    registry version 1) against the final champion."""
    return sql(open_store(store_uri), HOLDOUT_EXCESS.format(run=run_id))


IMPROVEMENT = """
SELECT count(*) AS champions,
       (SELECT count(*) FROM gate_decisions WHERE run_id = '{run}' AND decision = 'accept') AS accepted,
       (SELECT count(*) FROM gate_decisions WHERE run_id = '{run}') AS gated
FROM registry WHERE run_id = '{run}'
"""


def improvement_line(store_uri: str, run_id: str) -> str:
    """In words: did any child beat the seed, and how often did the gate let one through."""
    [row] = sql(open_store(store_uri), IMPROVEMENT.format(run=run_id)).to_pylist()
    children = max(row["gated"] - 1, 0)
    if row["champions"] <= 1:
        return (f"no child beat the seed: the gate rejected all {children} children, so the champion is the seed "
                "program (try a larger --budget)")
    return (f"{row['champions'] - 1} of {children} children beat the champion of their time and were registered; "
            "the last one is the champion")


def run_demo(console: Console, store_uri: str, budget: int, bin_budget: int) -> None:
    sandbox = SandboxConfig(timeout_s=DEMO_TIMEOUT_S)
    circle = execute_run(console, store_uri, RunConfig(loop="evolve", suite="circle_packing", budget=budget, seed=0,
                                                       proposer=PROPOSER, sandbox=sandbox), None)
    bins = execute_run(console, store_uri, RunConfig(loop="evolve", suite="bin_packing", budget=bin_budget, seed=0,
                                                     proposer=PROPOSER, sandbox=sandbox), None)
    label, best = PUBLISHED["circle_packing"]
    console.rule("Ratchet demo")
    console.print("select = the cases the gate compares candidates on; holdout = cases never used for selection, "
                  "scored only for registered champions (the honest estimate).")
    console.print(f"circle_packing champion: select {circle['select_score']:.6f}, holdout (n=32) "
                  f"{circle['holdout_score']:.6f}; {label}: {best} "
                  f"({100 * circle['select_score'] / best:.2f}% of it) after {circle['executions']} executions")
    console.print("  " + improvement_line(store_uri, circle["run_id"]))
    console.print(f"bin_packing champion: mean excess {-bins['select_score']:.3f}% on select instances, "
                  f"{-bins['holdout_score']:.3f}% on holdout instances (lower is better)")
    console.print("  " + improvement_line(store_uri, bins["run_id"]))
    render(console, holdout_excess(store_uri, bins["run_id"]), title="holdout excess % (mean bins / mean L1 - 1), "
                                                                       "seed = best fit")
    console.print(f"\nData: Parquet tables under {store_uri}/tables, blobs under {store_uri}/blobs")
    console.print("Query it in SQL (after `source .venv/bin/activate`):")
    for query in EXAMPLE_QUERIES:
        console.print(f"  ratchet sql \"{query}\"")
    console.print(f"Plot a run:  ratchet report {circle['run_id']}")
    console.print(f"Open it from any DuckDB client:  ratchet catalog  ->  duckdb {store_uri}/catalog.duckdb")
    console.print(f"MLflow UI:   .venv/bin/mlflow ui --backend-store-uri sqlite:///{store_uri}/mlflow.db")
    console.print(f"Prefect UI:  PREFECT_HOME={store_uri}/prefect .venv/bin/prefect server start")
