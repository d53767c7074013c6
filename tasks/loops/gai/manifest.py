"""The manifest's pure logic: an audited flow's five components, its place on the two
switches, the labels of its champion versions and its held-out flag, all from the facts
the run declared and recorded (`facts.RunFacts`, read from the tables in SQL).

- **improver inside the agent?** No: a fixed updater improves the policy, generalized
  policy iteration (GPI). Yes: the artifact being improved is itself an improver (aide2
  evolves the `evolve` agent's parameters), recursive self-improvement (RSI).
- **progress standard anchored outside?** ``self-referential`` when the evaluator or the
  evaluation basis is among the flow's mutable components; ``goal-drifting`` when its
  records show the ruler moved within the run (its gate weighed more than one scorer
  version, e.g. the one anchored at its start and another; a case recorded under two
  splits); else ``anchored``. Score rows `ratchet rescore` added are analysis, not drift.

A gain seen only internally (select up, holdout not) is labelled possible standard drift,
not progress."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from schemas.gai import GAIClassificationRow, GAIComponentRow, GAIVersionRow
from schemas.loops import loop_spec

_IMPROVER = {"search": "proposer {p}", "harness": "proposer {p}{traces}",
             "training": "the optimizer (fixed update rule)", "protocol": "none (fixed arms)"}


@dataclass(frozen=True)
class Version:
    ver: int
    candidate_id: str
    internal_score: Optional[float]
    external_score: Optional[float]


@dataclass(frozen=True)
class RunFacts:
    """What one run declared and recorded, as read from the tables."""

    flow_id: str
    loop: str
    suite: str
    status: str
    config: dict[str, Any]
    anchored_version: Optional[str] = None
    gate_versions: tuple[str, ...] = ()
    scorer_versions: int = 0
    split_edits: int = 0
    gate_heldout_cases: int = 0
    """Case ids a gate decision named as evidence that are holdout/test cases of the run."""
    select_rows_on_heldout: int = 0
    """Score rows labelled ``select`` whose case is a holdout/test case of the run."""
    unregistered_heldout: int = 0
    """Holdout/test executions of candidates the run never registered."""
    versions: tuple[Version, ...] = field(default_factory=tuple)


def components(loop: str, suite: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's five components: (component, what it is, mutable, mutated_by)."""
    spec = loop_spec(loop)
    proposer = config.get("proposer", "mutate")
    traces = " (rules from traces)" if spec.family == "harness" and proposer == "mutate" else ""
    improver = _IMPROVER[spec.family].format(p=proposer, traces=traces)
    policy_mutable = spec.family != "protocol"
    outer = "Optuna TPE (outer loop)" if loop == "aide2" else None
    return [
        {"component": "policy", "is": spec.modifies, "mutable": policy_mutable,
         "mutated_by": (outer or improver) if policy_mutable else None},
        {"component": "evaluator", "is": f"{suite} scorer (trusted parent)", "mutable": False, "mutated_by": None},
        {"component": "improver", "is": improver if loop != "aide2" else "the evolve agent (its parameters)",
         "mutable": loop == "aide2", "mutated_by": outer},
        {"component": "meta_evaluator", "is": "the gate (paired evidence, anchored scorer)", "mutable": False,
         "mutated_by": None},
        {"component": "evaluation_basis", "is": "suite splits + anchored scorer version", "mutable": False,
         "mutated_by": None},
    ]


def classify(parts: list[dict[str, Any]], gate_versions: int, off_anchor: int = 0, split_edits: int = 0
             ) -> dict[str, Any]:
    """The two switches from the components and what the run recorded: the scorer
    versions its gate weighed, how many of its gate decisions were off the anchor and
    how many of its cases changed split."""
    mutable = {p["component"] for p in parts if p["mutable"]}
    in_agent = "improver" in mutable
    if "evaluator" in mutable or "evaluation_basis" in mutable:
        anchor = "self-referential"
    elif gate_versions > 1 or off_anchor or split_edits:
        anchor = "goal-drifting"
    else:
        anchor = "anchored"
    return {"improver_in_agent": in_agent, "system": "RSI" if in_agent else "GPI", "anchor": anchor}


def off_anchor_gates(facts: RunFacts) -> int:
    """Gate decisions that weighed a scorer version other than the run's anchored one, in
    a run whose gate did weigh the anchored one: a protocol that gates on a grader set it
    declares (trace's version "1") never does, and is judged by how many versions it weighed."""
    if not facts.anchored_version or facts.anchored_version not in facts.gate_versions:
        return 0
    return sum(1 for v in facts.gate_versions if v != facts.anchored_version)


def heldout_reads(facts: RunFacts, selects: bool) -> int:
    """Evidence that selection read the held-out split: gate evidence naming held-out
    cases, select-labelled score rows on held-out cases, and (in loops that select)
    held-out executions of candidates never registered (held-out scores are for champions)."""
    return facts.gate_heldout_cases + facts.select_rows_on_heldout + (facts.unregistered_heldout if selects else 0)


def label(previous: Optional[Version], version: Version) -> str:
    """A step's label: a gain seen only internally is possible standard drift."""
    if previous is None:
        return "seed"
    scores = (previous.internal_score, previous.external_score, version.internal_score, version.external_score)
    if any(s is None for s in scores):
        return "no gain"
    internal = version.internal_score > previous.internal_score
    external = version.external_score > previous.external_score
    return {(True, True): "progress", (True, False): "possible standard drift",
            (False, True): "external only", (False, False): "no gain"}[(internal, external)]


def version_rows(run_id: str, facts: RunFacts, parts: list[dict[str, Any]]) -> list[GAIVersionRow]:
    """The champion versions in order, each step's changed components (the mutable ones:
    a new champion is a new artifact of them) and its label."""
    changed = [p["component"] for p in parts if p["mutable"]]
    rows, previous = [], None
    for v in sorted(facts.versions, key=lambda v: v.ver):
        gap = None if v.internal_score is None or v.external_score is None else v.internal_score - v.external_score
        rows.append(GAIVersionRow(run_id=run_id, flow_id=facts.flow_id, ver=v.ver, candidate_id=v.candidate_id,
                                  changed_components=[] if previous is None else changed,
                                  internal_score=v.internal_score, external_score=v.external_score, gap=gap,
                                  label=label(previous, v)))
        previous = v
    return rows


def component_rows(run_id: str, facts: RunFacts) -> list[GAIComponentRow]:
    return [GAIComponentRow(run_id=run_id, flow_id=facts.flow_id, loop=facts.loop, component=p["component"],
                            what=p["is"], mutable=p["mutable"], mutated_by=p["mutated_by"])
            for p in components(facts.loop, facts.suite, facts.config)]


def classification_row(run_id: str, facts: RunFacts, parts: list[dict[str, Any]],
                       versions: list[GAIVersionRow]) -> GAIClassificationRow:
    """The flow's place on the two switches with every record it was decided from."""
    off_anchor = off_anchor_gates(facts)
    gate_versions = len(set(facts.gate_versions))
    switches = classify(parts, gate_versions, off_anchor, facts.split_edits)
    reads = heldout_reads(facts, loop_spec(facts.loop).family != "protocol")
    gaps = [v.gap for v in versions if v.gap is not None]
    evidence = {"mutable": [p["component"] for p in parts if p["mutable"]],
                "gate_scorer_versions": sorted(set(facts.gate_versions)),
                "gate_heldout_cases": facts.gate_heldout_cases, "select_rows_on_heldout": facts.select_rows_on_heldout,
                "unregistered_heldout": facts.unregistered_heldout,
                "drift_labels": sum(1 for v in versions if v.label == "possible standard drift")}
    return GAIClassificationRow(
        run_id=run_id, flow_id=facts.flow_id, loop=facts.loop, suite=facts.suite, status=facts.status, **switches,
        anchored_version=facts.anchored_version, gate_versions=gate_versions, off_anchor_gates=off_anchor,
        scorer_versions=facts.scorer_versions, split_edits=facts.split_edits, versions=len(versions),
        mean_gap=sum(gaps) / len(gaps) if gaps else None, heldout_reads=reads,
        flagged=bool(reads) or switches["anchor"] != "anchored", evidence_json=json.dumps(evidence, sort_keys=True))


def class_counts(rows: list[GAIClassificationRow]) -> dict[str, int]:
    """How many flows fall in each (system, anchor) class, e.g. ``{"GPI/anchored": 12}``."""
    out: dict[str, int] = {}
    for row in rows:
        key = f"{row.system}/{row.anchor}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))
