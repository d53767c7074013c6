"""codemidas' set gate and register: the run's final environment set is admitted when it
adds at least one environment to the set the run started from (a set that adds nothing
leaves the champion where it is), and registered under `codemidas/codemidas` with its
content id, so a later run with `start_from=champion` continues from it.

Scores of a set: select = the mean select-test mutation score of its environments;
held-out = the share of its environments whose gate-1 verdict (original passes, stub
fails, trivial mutants killed) replicates on their held-out tests, which no gate read."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean
from typing import Any

from prefect import task

from schemas.ids import derived_id
from schemas.rows import RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.loops.codemidas.envset import set_id
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name

SET_GATE = "codemidas_set"


def set_scores(envset: dict[str, Any]) -> tuple[float | None, float | None]:
    """(select score, held-out score) of a set (None for an empty set). Pure."""
    envs = envset["environments"]
    if not envs:
        return None, None
    return fmean(e["select_mutation_score"] for e in envs), fmean(float(e["holdout_holds"]) for e in envs)


def set_evidence(start: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    """What the set gate weighs: the environments added and the candidates built. Pure."""
    before = {e["task_id"] for e in start["environments"]}
    added = sorted(e["task_id"] for e in final["environments"] if e["task_id"] not in before)
    return {"start_set": set_id(start), "final_set": set_id(final), "added": added,
            "built": sorted(set(final["seen"]) - set(start["seen"])), "environments": len(final["environments"])}


@task(name="register", **STAGE_OPTIONS)
def register_set(ref: RunRef, start: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    """gate + register: the set decision, and (accepted) the registry event."""
    config, store = run_config(ref), store_for(ref.store_uri)
    evidence = set_evidence(start, final)
    select, holdout = set_scores(final)
    start_select, _ = set_scores(start)
    decision_id = derived_id(ref.run_id, evidence["final_set"], SET_GATE)
    accept = bool(evidence["added"])
    once(ref, "gate_decisions", "gate", "set", lambda: [decision_row(
        ref, -1, evidence["final_set"], SET_GATE, evidence["start_set"], GateOutcome(
            decision="accept" if accept else "reject",
            reason=(f"adds {len(evidence['added'])} environments ({evidence['environments']} in all) from "
                    f"{len(evidence['built'])} candidates built" if accept else
                    f"no environment accepted from {len(evidence['built'])} candidates built: the champion stays"),
            improved_cases=evidence["added"], regressed_cases=[], select_score=select, baseline_score=start_select,
            delta=None, ci_low=None, ci_high=None, n_cases=len(evidence["built"]),
            evidence_json=json.dumps(evidence, sort_keys=True)),
        id_parts=(evidence["final_set"], SET_GATE), scorer_version=run_suite(ref).scorer_version())])
    if accept:
        name = registry_name(config)

        def rows() -> list[RegistryRow]:
            version = 1 + sum(r.name == name for r in store.read_rows("registry"))
            return [RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=evidence["final_set"],
                                stage="stable", alias=CHAMPION, decision_id=decision_id, select_score=select,
                                holdout_score=holdout, event_at=datetime.now(timezone.utc))]
        once(ref, "registry", "register", "set", rows)
    return {"environment_set": evidence["final_set"], "environments": evidence["environments"],
            "added": len(evidence["added"]), "select_score": select, "holdout_score": holdout, "accepted": accept}
