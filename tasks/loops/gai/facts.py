"""What each run of a store declared and recorded, read in SQL through the store's
catalog (the same views `ratchet sql` opens): one `RunFacts` per run. Held-out reads by
selection are found in the rows, wherever they came from: a gate decision whose evidence
names a holdout/test case, a ``select`` score row on a holdout/test case, a holdout/test
execution of a never-registered candidate."""

from __future__ import annotations

import json
from typing import Any, Iterable

from tasks.loops.gai.manifest import RunFacts, Version

RUNS = """
SELECT run_id, loop, suite, status, config_json FROM runs_current ORDER BY started_at, run_id
"""
GATE_VERSIONS = "SELECT run_id, scorer_version FROM gate_decisions ORDER BY run_id, decision_id"
SCORER_VERSIONS = "SELECT run_id, count(DISTINCT scorer_version) AS n FROM scores GROUP BY run_id"
SPLIT_EDITS = """
SELECT run_id, count(*) AS n FROM (
  SELECT run_id, suite, case_id FROM cases GROUP BY ALL HAVING count(DISTINCT split) > 1) GROUP BY run_id
"""
GATE_HELDOUT = """
SELECT g.run_id, count(*) AS n FROM gate_decisions g,
       unnest(list_concat(g.improved_cases, g.regressed_cases)) AS u(case_id)
JOIN (SELECT DISTINCT run_id, case_id FROM cases WHERE split IN ('holdout', 'test')) c
  ON c.run_id = g.run_id AND c.case_id = u.case_id
GROUP BY g.run_id
"""
SELECT_ON_HELDOUT = """
SELECT s.run_id, count(*) AS n FROM scores s
JOIN (SELECT DISTINCT run_id, case_id FROM cases WHERE split IN ('holdout', 'test')) c
  ON c.run_id = s.run_id AND c.case_id = s.case_id
WHERE s.split = 'select' GROUP BY s.run_id
"""
UNREGISTERED_HELDOUT = """
SELECT e.run_id, count(*) AS n FROM executions e
WHERE e.split IN ('holdout', 'test')
  AND e.candidate_id NOT IN (SELECT candidate_id FROM registry g WHERE g.run_id = e.run_id)
GROUP BY e.run_id
"""
VERSIONS = """
SELECT run_id, version, candidate_id, select_score, holdout_score
FROM registry WHERE stage = 'champion' OR alias = 'champion' ORDER BY run_id, version
"""


def store_facts(store_uri: str, flow_ids: Iterable[str] | None = None) -> list[RunFacts]:
    """The facts of every run of the store (or of ``flow_ids``), in start order."""
    from storage.catalog import connect
    from storage.store import open_store

    con = connect(open_store(store_uri))
    try:
        runs = fetch(con, RUNS)
        if not runs:
            return []
        counts = {name: {r["run_id"]: r["n"] for r in fetch(con, query)} for name, query in (
            ("scorers", SCORER_VERSIONS), ("splits", SPLIT_EDITS), ("gate", GATE_HELDOUT),
            ("select", SELECT_ON_HELDOUT), ("unregistered", UNREGISTERED_HELDOUT))}
        gates = fetch(con, GATE_VERSIONS)
        versions = fetch(con, VERSIONS)
    finally:
        con.close()
    wanted = None if flow_ids is None else set(flow_ids)
    return [_facts(run, counts, gates, versions) for run in runs if wanted is None or run["run_id"] in wanted]


def _facts(run: dict, counts: dict[str, dict[str, int]], gates: list[dict], versions: list[dict]) -> RunFacts:
    rid = run["run_id"]
    raw = json.loads(run["config_json"])
    return RunFacts(
        flow_id=rid, loop=run["loop"], suite=run["suite"], status=run["status"], config=raw.get("config", raw),
        anchored_version=raw.get("scorer_version"),
        gate_versions=tuple(g["scorer_version"] for g in gates if g["run_id"] == rid),
        scorer_versions=counts["scorers"].get(rid, 0), split_edits=counts["splits"].get(rid, 0),
        gate_heldout_cases=counts["gate"].get(rid, 0), select_rows_on_heldout=counts["select"].get(rid, 0),
        unregistered_heldout=counts["unregistered"].get(rid, 0),
        versions=tuple(Version(v["version"], v["candidate_id"], v["select_score"], v["holdout_score"])
                       for v in versions if v["run_id"] == rid))


def fetch(con, query: str) -> list[dict[str, Any]]:
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
