"""The manifest's stages at their Prefect boundaries. Every stage publishes its part
through `tasks.runtime.parts.once`: the set of audited flows is fixed by the sample part,
so a retry or `ratchet resume` audits the same flows and writes nothing new.

Where the spec's tables live: ``components`` is `gai_components`, ``versions`` is
`gai_versions`, ``classification`` is `gai_classification` (each row names the audited
run as ``flow_id``); the gate's flags are `gate_decisions` whose evidence is the records
the class was decided from."""

from __future__ import annotations

import json

from prefect import task

from schemas.gai import GAIClassificationRow, GAIComponentRow, GAIVersionRow
from schemas.ids import content_id
from schemas.loops import LOOP_SPECS
from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.stats import paired_bootstrap_ci
from tasks.loops.gai.facts import store_facts
from tasks.loops.gai.manifest import (
    RunFacts,
    class_counts,
    classification_row,
    component_rows,
    components,
    version_rows,
)
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS


def audited(ref: RunRef, facts: RunFacts) -> bool:
    """Whether the manifest covers ``facts``' run: a known loop other than gai, in the
    configured loops, failed runs only when asked."""
    section = run_config(ref).gai
    return (facts.flow_id != ref.run_id and facts.loop in LOOP_SPECS and facts.loop != "gai"
            and (not section.loops or facts.loop in section.loops)
            and (section.include_failed or facts.status in ("finished", "budget_exhausted")))


@task(name="sample", **STAGE_OPTIONS)
def declare_components(ref: RunRef) -> list[str]:
    """sample: every audited flow declares its five components (from its loop spec and
    config), once; the flows of this part are the ones every later stage audits."""
    rows: list[GAIComponentRow] = once(ref, "gai_components", "sample", "components", lambda: [
        row for facts in store_facts(ref.store_uri) if audited(ref, facts)
        for row in component_rows(ref.run_id, facts)])
    return list(dict.fromkeys(row.flow_id for row in rows))


@task(name="execute", **STAGE_OPTIONS)
def read_records(ref: RunRef, flow_ids: list[str]) -> list[RunFacts]:
    """execute: what each flow recorded, read in SQL (nothing is re-run)."""
    return store_facts(ref.store_uri, flow_ids) if flow_ids else []


@task(name="distill", **STAGE_OPTIONS)
def attribute_versions(ref: RunRef, records: list[RunFacts]) -> list[GAIVersionRow]:
    """score + distill: each champion version's internal (select) and external (holdout)
    score, its diff attributed to the flow's mutable components, its step labelled."""
    return once(ref, "gai_versions", "distill", "versions", lambda: [
        row for facts in records for row in version_rows(ref.run_id, facts, _parts(facts))])


@task(name="gate", **STAGE_OPTIONS)
def flag_flows(ref: RunRef, records: list[RunFacts]) -> list[GateDecisionRow]:
    """gate: one decision per flow; ``reject`` flags a flow whose standard is not
    anchored or whose held-out split selection read. The evidence is the classification."""
    return once(ref, "gate_decisions", "gate", "flags", lambda: [
        _flag(ref, c, [v.gap for v in _versions(ref) if v.flow_id == c.flow_id and v.gap is not None])
        for c in _classes(ref, records)])


@task(name="register", **STAGE_OPTIONS)
def register_positions(ref: RunRef, records: list[RunFacts]) -> list[GAIClassificationRow]:
    """register: each flow's position on the two switches."""
    return once(ref, "gai_classification", "register", "classification", lambda: _classes(ref, records))


def _parts(facts: RunFacts) -> list[dict]:
    return components(facts.loop, facts.suite, facts.config)


def _versions(ref: RunRef) -> list[GAIVersionRow]:
    return store_for(ref.store_uri).read_part("gai_versions", ref.run_id, "distill", "versions")


def _classes(ref: RunRef, records: list[RunFacts]) -> list[GAIClassificationRow]:
    versions = _versions(ref)
    return [classification_row(ref.run_id, facts, _parts(facts), [v for v in versions if v.flow_id == facts.flow_id])
            for facts in records]


def _flag(ref: RunRef, c: GAIClassificationRow, gaps: list[float]) -> GateDecisionRow:
    """A flow's flag, with the CI of its champions' mean internal − external gap: a gap
    whose CI holds 0 is inside the noise floor of its versions."""
    config = run_config(ref)
    ci = paired_bootstrap_ci(gaps, resamples=config.gai.resamples, seed=config.seed)
    evidence = {"gap_ci": json_safe(list(ci)), "gap_inside_noise": bool(gaps) and ci[0] <= 0.0 <= ci[1],
                **json.loads(c.evidence_json), "flow_id": c.flow_id, "loop": c.loop, "system": c.system,
                "anchor": c.anchor, "anchored_version": c.anchored_version, "off_anchor_gates": c.off_anchor_gates,
                "split_edits": c.split_edits, "heldout_reads": c.heldout_reads}
    manifest = content_id(json.dumps(evidence, sort_keys=True))
    why = [f"standard {c.anchor}"] + ([f"{c.heldout_reads} held-out reads by selection"] if c.heldout_reads else [])
    if gaps:
        why.append(f"internal − external gap {c.mean_gap:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] over {len(gaps)} versions")
    outcome = GateOutcome(
        decision="reject" if c.flagged else "accept", reason=f"{c.flow_id} ({c.loop}): {c.system}, {'; '.join(why)}",
        improved_cases=[], regressed_cases=[], select_score=None, baseline_score=None, delta=json_safe(c.mean_gap),
        ci_low=json_safe(ci[0]), ci_high=json_safe(ci[1]), n_cases=len(gaps), evidence_json=dump_evidence(evidence))
    return decision_row(ref, 0, manifest, "gai:manifest", None, outcome, id_parts=(c.flow_id, "gai"),
                        scorer_version="manifest")


def manifest_summary(ref: RunRef) -> dict[str, object]:
    """The line per flow the CLI prints, and the count of each class."""
    rows = store_for(ref.store_uri).read_part("gai_classification", ref.run_id, "register", "classification")
    return {"run_id": ref.run_id, "flows": len(rows), **class_counts(rows),
            "heldout_read_by_selection": ", ".join(r.flow_id for r in rows if r.heldout_reads) or "none"}

