"""`ratchet audit`: the loop manifest of a store (GAI: Generalized Agent Iteration), printed.
For every run, its five components (policy, evaluator, improver, meta-evaluator,
evaluation basis), whether each is mutable and by what, and its place on the paper's two
switches (GPI or RSI; anchored, goal-drifting or self-referential), decided from what the
run declares and records (`tasks.loops.gai.manifest`, which `ratchet run gai` stores as a
run's tables). Runs whose held-out split was ever read by selection are flagged: a gate
decision naming a holdout/test case, a ``select`` score row on one, a holdout/test
execution of a never-registered candidate. A gain seen only internally (select) is
labelled possible standard drift, not progress: the internal − external gap is printed."""

from __future__ import annotations

import json
from typing import Any

from tasks.loops.gai.facts import store_facts
from tasks.loops.gai.manifest import classification_row, components, version_rows


def audit(store_uri: str) -> dict[str, list[dict[str, Any]]]:
    """The store's classification, components and versions tables, computed now from its
    rows (`ratchet run gai` stores the same tables as a run's parts)."""
    from schemas.loops import LOOP_SPECS

    classification, parts_of, versions = [], [], []
    for facts in store_facts(store_uri):
        if facts.loop not in LOOP_SPECS or facts.loop == "gai":
            continue
        parts = components(facts.loop, facts.suite, facts.config)
        parts_of.extend({"run_id": facts.flow_id, **p} for p in parts)
        own = version_rows("audit", facts, parts)
        versions.extend({**v.model_dump(exclude={"run_id", "flow_id"}), "run_id": facts.flow_id} for v in own)
        row = classification_row("audit", facts, parts, own).model_dump(exclude={"run_id", "flow_id"})
        classification.append({"run_id": facts.flow_id, **row})
    return {"classification": classification, "components": parts_of, "versions": versions}


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
              "heldout reads": c["heldout_reads"]} for c in tables["classification"]]
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
    flagged = [c["run_id"] for c in tables["classification"] if c["heldout_reads"]]
    console.print(f"held-out split read by selection: {', '.join(flagged) if flagged else 'no run'}")
