"""`ratchet audit`: the loop manifest of a store (GAI: Generalized Agent Iteration). For
every run, its components (policy, evaluator, improver, meta-evaluator, evaluation
basis), whether each is mutable and by what, and the run's place on the paper's two
switches, decided from what the run declares (its loop's spec, its config) and records
(its score rows' scorer versions, its registry, its gate evidence):

- **improver inside the agent?** No: a fixed updater improves the policy, generalized
  policy iteration (GPI). Yes: the artifact being improved is itself an improver (aide2
  evolves the `evolve` agent's parameters), recursive self-improvement (RSI).
- **progress standard anchored outside?** ``anchored``: every score row of the run has
  the scorer version fixed at its start, and no candidate can edit the scorer (it runs
  in the trusted parent; the sandbox hides its files). ``goal-drifting``: its gate
  decisions weighed more than one scorer version (the ruler changed within the run;
  score rows that `ratchet rescore` added later are analysis, counted apart). ``self-referential`` would
  need the evaluator among the mutable components; no Ratchet loop has it.

It also flags runs whose held-out split was ever read by selection: a gate decision
that names a holdout or test case as evidence, or a holdout/test execution of a
candidate that was never registered (held-out scores are for champions only). A gain
seen only internally (select) and not externally (holdout) is labelled possible
standard drift, not progress: the versions' internal − external gap is printed."""

from __future__ import annotations

import json
from typing import Any

SCORERS = """
SELECT r.run_id, r.loop, r.suite, r.status, r.config_json,
       (SELECT count(DISTINCT g.scorer_version) FROM gate_decisions g WHERE g.run_id = r.run_id) AS gate_versions,
       (SELECT count(DISTINCT s.scorer_version) FROM scores s WHERE s.run_id = r.run_id) AS scorer_versions
FROM runs_current r ORDER BY r.started_at, r.run_id
"""
VERSIONS = """
SELECT run_id, version, candidate_id, select_score AS internal_score, holdout_score AS external_score
FROM registry WHERE stage = 'champion' OR alias = 'champion' ORDER BY run_id, version
"""
GATE_LEAKS = """
SELECT g.run_id, count(*) AS n FROM gate_decisions g,
       unnest(list_concat(g.improved_cases, g.regressed_cases)) AS u(case_id)
JOIN cases c ON c.run_id = g.run_id AND c.case_id = u.case_id
WHERE c.split IN ('holdout', 'test') GROUP BY g.run_id
"""
UNREGISTERED_HELDOUT = """
SELECT e.run_id, count(*) AS n FROM executions e
WHERE e.split IN ('holdout', 'test')
  AND e.candidate_id NOT IN (SELECT candidate_id FROM registry g WHERE g.run_id = e.run_id)
GROUP BY e.run_id
"""


def components(loop: str, suite: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's five components: (component, what it is, mutable, mutated_by)."""
    from schemas.loops import loop_spec

    spec = loop_spec(loop)
    proposer = config.get("proposer", "mutate")
    traces = " (rules from traces)" if spec.family == "harness" and proposer == "mutate" else ""
    improver = {"search": f"proposer {proposer}", "harness": f"proposer {proposer}{traces}",
                "training": "the optimizer (fixed update rule)", "protocol": "none (fixed arms)"}[spec.family]
    policy_mutable = spec.family != "protocol"
    outer = "Optuna TPE (outer loop)" if loop == "aide2" else None
    return [
        {"component": "policy", "is": spec.modifies, "mutable": policy_mutable,
         "mutated_by": (outer or improver) if policy_mutable else None},
        {"component": "evaluator", "is": f"{suite} scorer (trusted parent)", "mutable": False,
         "mutated_by": None},
        {"component": "improver", "is": improver if loop != "aide2" else "the evolve agent (its parameters)",
         "mutable": loop == "aide2", "mutated_by": outer},
        {"component": "meta_evaluator", "is": "the gate (paired evidence, anchored scorer)", "mutable": False,
         "mutated_by": None},
        {"component": "evaluation_basis", "is": "suite splits + anchored scorer version", "mutable": False,
         "mutated_by": None},
    ]


def classify(parts: list[dict[str, Any]], gate_versions: int) -> dict[str, Any]:
    """The two switches from the components and the scorer versions the run's gate
    decisions weighed (rows rescored later, `ratchet rescore`, are analysis, not drift)."""
    mutable = {p["component"] for p in parts if p["mutable"]}
    in_agent = "improver" in mutable
    if "evaluator" in mutable or "evaluation_basis" in mutable:
        anchor = "self-referential"
    elif gate_versions > 1:
        anchor = "goal-drifting"
    else:
        anchor = "anchored"
    return {"improver_in_agent": in_agent, "system": "RSI" if in_agent else "GPI", "anchor": anchor}


def audit(store_uri: str) -> dict[str, list[dict[str, Any]]]:
    """The store's classification, components and versions tables."""
    from storage.catalog import connect
    from storage.store import open_store

    con = connect(open_store(store_uri))
    try:
        runs = _fetch(con, SCORERS)
        versions = _fetch(con, VERSIONS) if runs else []
        gate_leaks = {r["run_id"]: r["n"] for r in _fetch(con, GATE_LEAKS)} if runs else {}
        unregistered = {r["run_id"]: r["n"] for r in _fetch(con, UNREGISTERED_HELDOUT)} if runs else {}
    finally:
        con.close()
    return _tables(runs, versions, gate_leaks, unregistered)


def _tables(runs, versions, gate_leaks, unregistered) -> dict[str, list[dict[str, Any]]]:
    from schemas.loops import LOOP_SPECS

    classification, parts_of = [], []
    for run in runs:
        if run["loop"] not in LOOP_SPECS:
            continue
        raw = json.loads(run["config_json"])
        config = raw.get("config", raw)
        parts = components(run["loop"], run["suite"], config)
        parts_of.extend({"run_id": run["run_id"], **p} for p in parts)
        own = [v for v in versions if v["run_id"] == run["run_id"]]
        gaps = [v["internal_score"] - v["external_score"] for v in own
                if v["internal_score"] is not None and v["external_score"] is not None]
        selects = LOOP_SPECS[run["loop"]].family != "protocol"
        leaks = gate_leaks.get(run["run_id"], 0) + (unregistered.get(run["run_id"], 0) if selects else 0)
        classification.append({
            "run_id": run["run_id"], "loop": run["loop"], "status": run["status"],
            **classify(parts, run["gate_versions"] or 0), "gate_versions": run["gate_versions"] or 0,
            "scorer_versions": run["scorer_versions"] or 0,
            "versions": len(own), "mean_gap": sum(gaps) / len(gaps) if gaps else None,
            "heldout_read_by_selection": leaks,
        })
    return {"classification": classification, "components": parts_of,
            "versions": [{**v, "gap": None if v["internal_score"] is None or v["external_score"] is None
                          else v["internal_score"] - v["external_score"]} for v in versions]}


def _fetch(con, query: str) -> list[dict[str, Any]]:
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def print_audit(console, store_uri: str, format: str) -> None:
    """The three tables as rich tables, or one JSON object / CSV of the classification."""
    import pyarrow as pa

    from cli.views import render

    tables = audit(store_uri)
    if format == "json":
        print(json.dumps(tables, default=str, indent=1))
        return
    if format == "csv":
        import pyarrow.csv as pacsv

        sink = pa.BufferOutputStream()
        pacsv.write_csv(pa.Table.from_pylist(tables["classification"]), sink)
        print(sink.getvalue().to_pybytes().decode(), end="")
        return
    if not tables["classification"]:
        console.print("no runs in the store yet; start one with `ratchet run evolve`")
        return
    short = [{"run_id": c["run_id"], "loop": c["loop"], "system": c["system"], "anchor": c["anchor"],
              "gate scorers": c["gate_versions"], "score scorers": c["scorer_versions"], "champions": c["versions"],
              "select−holdout": None if c["mean_gap"] is None else round(c["mean_gap"], 4),
              "heldout reads": c["heldout_read_by_selection"]} for c in tables["classification"]]
    render(console, pa.Table.from_pylist(short), "classification: GPI = fixed updater, RSI = the improver is "
                                                 "itself improved; anchor of the progress standard")
    seen, rows = set(), []
    for part in tables["components"]:  # one listing per loop and improver
        loop = next(c["loop"] for c in tables["classification"] if c["run_id"] == part["run_id"])
        key = (loop, part["component"], part["is"])
        if key not in seen:
            seen.add(key)
            rows.append({"loop": loop, **{k: v for k, v in part.items() if k != "run_id"}})
    render(console, pa.Table.from_pylist(rows), "components")
    flagged = [c["run_id"] for c in tables["classification"] if c["heldout_read_by_selection"]]
    console.print(f"held-out split read by selection: {', '.join(flagged) if flagged else 'no run'}")
