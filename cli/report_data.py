"""The rows `ratchet report` plots, read from a store's DuckDB views with bound
parameters (a run id is never pasted into SQL). Each reader returns plain dicts; the
series built from them live in `cli.report_series`, the drawing in `cli.report_draw*`."""

from __future__ import annotations

from collections import Counter
from typing import Any

import duckdb

Rows = list[dict[str, Any]]

RUN = """
SELECT run_id, loop, suite, status, error FROM runs_current WHERE run_id = $run
"""

CANDIDATES = "SELECT round, candidate_id, operator FROM candidates WHERE run_id = $run ORDER BY round, candidate_id"

SELECT_EXECUTIONS = """
SELECT e.candidate_id, e.case_id, e.status, s.value, s.valid
FROM executions e
LEFT JOIN scores s ON s.run_id = e.run_id AND s.execution_id = e.execution_id AND s.metric = $metric
WHERE e.run_id = $run AND e.split = 'select'
"""

SELECT_METRICS = "SELECT metric, count(*) AS n FROM scores WHERE run_id = $run AND split = 'select' GROUP BY metric"

DECISIONS = """
SELECT round, candidate_id, gate, decision, select_score, baseline_score, decision_id
FROM gate_decisions WHERE run_id = $run ORDER BY round, gate, candidate_id
"""

# One row per champion version (a version's latest event), with the round of the gate
# decision that admitted it when the decision is in this run.
CHAMPIONS = """
WITH latest AS (
  SELECT * FROM registry WHERE run_id = $run AND alias = 'champion'
  QUALIFY row_number() OVER (PARTITION BY name, version ORDER BY event_at DESC) = 1)
SELECT l.name, l.version, l.candidate_id, l.select_score, l.holdout_score, g.round
FROM latest l LEFT JOIN gate_decisions g ON g.run_id = l.run_id AND g.decision_id = l.decision_id
ORDER BY l.name, l.version
"""

TRAIN_STEPS = "SELECT candidate_id, step, loss, metrics FROM train_steps WHERE run_id = $run ORDER BY step"

SELECT_ACCURACY = """
SELECT c.round, c.candidate_id, c.operator, avg(s.value) AS accuracy, count(*) AS n_cases
FROM candidates c JOIN scores s ON s.run_id = c.run_id AND s.candidate_id = c.candidate_id
WHERE c.run_id = $run AND s.split = 'select' AND s.metric = $metric
GROUP BY ALL ORDER BY c.round
"""

NODES = """
SELECT round, node_id, parent_id, accepted, composite, public_composite, best_so_far
FROM nodes WHERE run_id = $run ORDER BY round
"""


def fetch(con: duckdb.DuckDBPyConnection, query: str, **params: Any) -> Rows:
    """One query's rows as dicts; only the parameters the query names are bound."""
    used = {k: v for k, v in params.items() if f"${k}" in query}
    return con.execute(query, used).to_arrow_table().to_pylist()


def has_rows(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> bool:
    """Whether the run wrote any row to `table` (one of the store's table views)."""
    return bool(fetch(con, f'SELECT 1 FROM "{table}" WHERE run_id = $run LIMIT 1', run=run_id))


def run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    rows = fetch(con, RUN, run=run_id)
    return rows[0] if rows else None


LAST_REGISTERED = ("SELECT candidate_id, select_score, holdout_score, stage FROM registry WHERE run_id = $run "
                   "ORDER BY version DESC, event_at DESC LIMIT 1")
GATE_REASON = "SELECT reason FROM gate_decisions WHERE run_id = $run AND gate = $gate ORDER BY round DESC LIMIT 1"


def last_registered(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """The run's latest registry event (highest version, newest event): what a report's
    caption quotes as the run's registered result; None when it registered nothing."""
    return next(iter(fetch(con, LAST_REGISTERED, run=run_id)), None)


def gate_reason(con: duckdb.DuckDBPyConnection, run_id: str, gate: str) -> str | None:
    """The reason of the run's last decision of ``gate``; None when that gate never decided."""
    row = next(iter(fetch(con, GATE_REASON, run=run_id, gate=gate)), None)
    return row["reason"] if row else None


def primary_metric(con: duckdb.DuckDBPyConnection, run_id: str, suite: str) -> str | None:
    """The metric the run's gate maximised: its suite's primary metric when the suite is
    known to the suite registry, else (arith, whose class is not registered) the metric
    most of the run's select scores carry."""
    from suites import SUITES

    if suite in SUITES:
        return SUITES[suite].primary_metric
    counts = Counter({r["metric"]: r["n"] for r in fetch(con, SELECT_METRICS, run=run_id)})
    return counts.most_common(1)[0][0] if counts else None


def search_rows(con: duckdb.DuckDBPyConnection, run_id: str, metric: str) -> dict[str, Rows]:
    return {
        "candidates": fetch(con, CANDIDATES, run=run_id),
        "executions": fetch(con, SELECT_EXECUTIONS, run=run_id, metric=metric),
        "decisions": fetch(con, DECISIONS, run=run_id),
        "champions": fetch(con, CHAMPIONS, run=run_id),
    }


def harness_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Rows]:
    return {"decisions": fetch(con, DECISIONS, run=run_id), "champions": fetch(con, CHAMPIONS, run=run_id)}


def training_rows(con: duckdb.DuckDBPyConnection, run_id: str, metric: str) -> dict[str, Rows]:
    steps = fetch(con, TRAIN_STEPS, run=run_id)
    for row in steps:  # an Arrow map arrives as (key, value) pairs
        row["metrics"] = dict(row["metrics"] or [])
    return {
        "steps": steps,
        "evaluations": fetch(con, SELECT_ACCURACY, run=run_id, metric=metric),
        "champions": fetch(con, CHAMPIONS, run=run_id),
    }


def node_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Rows]:
    return {"nodes": fetch(con, NODES, run=run_id), "champions": fetch(con, CHAMPIONS, run=run_id)}
