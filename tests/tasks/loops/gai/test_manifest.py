"""The manifest's switches, labels and held-out flag on hand-built run facts."""

import json

from tasks.loops.gai.manifest import (
    RunFacts,
    Version,
    class_counts,
    classification_row,
    classify,
    components,
    component_rows,
    heldout_reads,
    label,
    version_rows,
)


def facts(**kw) -> RunFacts:
    base = dict(flow_id="r1", loop="evolve", suite="spin", status="succeeded", config={"proposer": "mutate"},
                anchored_version="abc", gate_versions=("abc", "abc"))
    return RunFacts(**{**base, **kw})


def row(**kw):
    f = facts(**kw)
    parts = components(f.loop, f.suite, f.config)
    return classification_row("audit", f, parts, version_rows("audit", f, parts))


def test_a_fixed_updater_on_its_anchored_scorer_is_anchored_gpi():
    r = row()
    assert (r.system, r.improver_in_agent, r.anchor, r.gate_versions, r.off_anchor_gates, r.flagged) == (
        "GPI", False, "anchored", 1, 0, False)
    assert json.loads(r.evidence_json)["mutable"] == ["policy"]


def test_the_improver_inside_the_agent_makes_it_rsi():
    aide2 = components("aide2", "circle_packing+bin_packing", {"proposer": "optuna"})
    assert {p["component"]: p["mutable"] for p in aide2} == {
        "policy": True, "evaluator": False, "improver": True, "meta_evaluator": False, "evaluation_basis": False}
    assert classify(aide2, gate_versions=1) == {"improver_in_agent": True, "system": "RSI", "anchor": "anchored"}
    edits_scorer = [{**p, "mutable": True} if p["component"] == "evaluator" else p for p in aide2]
    assert classify(edits_scorer, gate_versions=1)["anchor"] == "self-referential"
    edits_basis = [{**p, "mutable": True} if p["component"] == "evaluation_basis" else p for p in aide2]
    assert classify(edits_basis, gate_versions=1)["anchor"] == "self-referential"


def test_a_ruler_that_moved_within_the_run_is_goal_drift():
    two = row(gate_versions=("abc", "def"))
    assert (two.anchor, two.gate_versions, two.off_anchor_gates, two.flagged) == ("goal-drifting", 2, 1, True)
    # a gate on one declared grader version throughout (trace's "1"), never the anchored one: no drift
    own = row(gate_versions=("1", "1"))
    assert (own.anchor, own.gate_versions, own.off_anchor_gates) == ("anchored", 1, 0)
    assert row(gate_versions=("abc", "zzz", "zzz")).off_anchor_gates == 2
    assert row(split_edits=2).anchor == "goal-drifting"
    assert row(anchored_version=None, gate_versions=("zzz",)).anchor == "anchored"  # nothing to compare with
    assert row(scorer_versions=2).anchor == "anchored"  # rescored rows are analysis


def test_held_out_reads_count_each_kind_and_unregistered_only_where_the_loop_selects():
    f = facts(gate_heldout_cases=1, select_rows_on_heldout=2, unregistered_heldout=4)
    assert heldout_reads(f, selects=True) == 7
    assert heldout_reads(f, selects=False) == 3
    assert row(gate_heldout_cases=1).heldout_reads == 1 and row(gate_heldout_cases=1).flagged
    protocol = row(loop="trace", suite="toolsim", unregistered_heldout=5)
    assert (protocol.system, protocol.heldout_reads, protocol.flagged) == ("GPI", 0, False)


def test_a_gain_seen_only_internally_is_possible_standard_drift():
    v1, v2 = Version(1, "a", 0.5, 0.4), Version(2, "b", 0.7, 0.4)
    assert [label(None, v1), label(v1, v2), label(v1, Version(2, "c", 0.6, 0.5)),
            label(v1, Version(2, "d", 0.4, 0.6)), label(v1, Version(2, "e", 0.5, 0.3)),
            label(v1, Version(2, "f", 0.9, None))] == [
        "seed", "possible standard drift", "progress", "external only", "no gain", "no gain"]
    f = facts(versions=(v2, v1))
    rows = version_rows("audit", f, components("evolve", "spin", {}))
    assert [(r.ver, r.changed_components, r.label) for r in rows] == [
        (1, [], "seed"), (2, ["policy"], "possible standard drift")]
    assert [round(r.gap, 6) for r in rows] == [0.1, 0.3]
    assert round(classification_row("audit", f, components("evolve", "spin", {}), rows).mean_gap, 6) == 0.2


def test_components_and_counts():
    parts = component_rows("audit", facts(loop="self_healing", suite="toolsim"))
    assert [(p.component, p.mutable, p.mutated_by) for p in parts][:3] == [
        ("policy", True, "proposer mutate (rules from traces)"), ("evaluator", False, None),
        ("improver", False, None)]
    rows = [row(), row(flow_id="r2"), row(flow_id="r3", loop="aide2", suite="circle_packing+bin_packing"),
            row(flow_id="r4", gate_versions=("x", "y"))]
    assert class_counts(rows) == {"GPI/anchored": 2, "GPI/goal-drifting": 1, "RSI/anchored": 1}
