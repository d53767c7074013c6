"""Pure logic of the designer_rsi loop: where a failure is charged, gap-pool counting
and thresholds (expand at 3 occurrences, deepen at 2), modes, the replay plan, and the
expand path on real toolsim trajectories."""

import json
import random

from suites.toolsim.suite import ToolSim
from tasks.loops.designer_rsi.designer_logic import (
    DEEPEN,
    EXPAND,
    PUBLISHED,
    Occurrence,
    PoolRecord,
    choose_design,
    eligible,
    fold,
    occurrence_of,
    replay_cases,
)
from tasks.proposers.rule_evidence import Evidence, Trace, trace_of


def step(name: str, ok: bool, via: str, code: str | None = None) -> dict:
    result = {"via": via, **({"error": {"code": code, "message": "x"}} if code else {"result": {}})}
    return {"step": 0, "kind": "tool_call", "name": name, "args_json": "{}", "result_json": json.dumps(result),
            "ok": ok, "reward": None, "logprob": None, "teacher_logprob": None}


def test_a_completed_plan_with_unmet_requirements_is_a_gap_of_its_template():
    trace = Trace("refund/001", "refund", (step("get_order", True, "default:refund"),), False,
                  unmet=("reason_damaged", "item_refunded"))
    occ = occurrence_of(trace, "e1")
    assert occ == Occurrence(EXPAND, "refund|unmet:item_refunded+reason_damaged", "refund/001", "e1",
                             "item_refunded+reason_damaged")


def test_a_broken_step_charges_the_item_that_made_it():
    steps = (step("get_order", True, "default:cancel"), step("cancel_order", False, "retry-1", "rate_limited"))
    occ = occurrence_of(Trace("cancel/003", "cancel", steps, False, unmet=("cancelled",)), "e2")
    assert (occ.pool, occ.signature, occ.detail) == (DEEPEN, "item:retry-1", "cancel_order:rate_limited")
    assert occurrence_of(Trace("cancel/004", "cancel", steps[:1], True), "e3") is None


def gap(case: str) -> Occurrence:
    return Occurrence(EXPAND, "t|unmet:a", case, f"x-{case}", "a")


def test_gap_counts_distinct_cases_and_needs_three_to_be_written():
    pool = fold({}, [gap("t/1"), gap("t/2"), gap("t/2")])
    assert pool["t|unmet:a"].count == 2 and pool["t|unmet:a"].execution_ids == ("x-t/1", "x-t/2")
    assert eligible(pool.values(), "both", gap_threshold=3, revise_threshold=2) == []
    pool = {**pool, **fold(pool, [gap("t/1"), gap("t/3")])}
    assert pool["t|unmet:a"].case_ids == ("t/1", "t/2", "t/3")
    assert [r.signature for r in eligible(pool.values(), "both", 3, 2)] == ["t|unmet:a"]


def test_a_failing_item_is_revised_from_its_second_failure_and_only_when_the_mode_allows():
    one = fold({}, [Occurrence(DEEPEN, "item:default:t", "t/1", "e1", "x:y")])
    assert eligible(one.values(), "both", 3, 2) == []
    two = {**one, **fold(one, [Occurrence(DEEPEN, "item:default:t", "t/2", "e2", "x:y")])}
    assert [r.count for r in eligible(two.values(), "revision_only", 3, 2)] == [2]
    assert eligible(two.values(), "expansion_only", 3, 2) == []
    assert len(eligible(two.values(), "both", 3, 2)) == 1


def test_a_published_record_is_closed_and_new_occurrences_open_the_next_generation():
    published = PoolRecord(EXPAND, "t|unmet:a", 0, ("t/1", "t/2", "t/3"), ("a", "b", "c"), PUBLISHED)
    assert eligible([published], "both", 3, 2) == []
    after = fold({"t|unmet:a": published}, [gap("t/1")])["t|unmet:a"]
    assert (after.generation, after.case_ids, after.status) == (1, ("t/1",), "open")


def test_replay_takes_the_record_cases_then_related_old_successes_first():
    record = PoolRecord(EXPAND, "refund|unmet:a", 0, ("refund/1", "refund/2"), ("e1", "e2"))
    olds = [Trace(f"{t}/{i}", t, (), True) for t in ("refund", "cancel") for i in range(5, 8)]
    targets, successes = replay_cases(record, olds, n_targets=6, n_successes=4, salt="s")
    assert sorted(targets) == ["refund/1", "refund/2"]
    assert sorted(successes[:3]) == ["refund/5", "refund/6", "refund/7"] and successes[3].startswith("cancel/")
    assert replay_cases(record, olds, 1, 0, "s")[1] == () and len(replay_cases(record, olds, 1, 0, "s")[0]) == 1


def refund_damaged_traces() -> list[Trace]:
    suite = ToolSim(seed=0, instances_per_template=20)
    empty = {"harness": {"version": 1, "rules": [], "skills": []}}
    cases = [c for c in suite.cases() if c.split == "train" and c.payload["template"] == "refund_damaged_item"]
    return [trace_of(c.case_id, c.payload, suite.episode(c, empty)) for c in cases]


def test_expand_writes_the_gap_skill_only_once_the_gap_has_three_occurrences():
    traces = refund_damaged_traces()
    completed = [t for t in traces if not t.success and occurrence_of(t, "e").pool == EXPAND]
    assert len(completed) >= 3
    document = {"version": 1, "rules": [], "skills": []}
    assert eligible(fold({}, [occurrence_of(t, t.case_id) for t in completed[:2]]).values(), "both", 3, 2) == []
    # with the pool's threshold lowered to 2, the gap_skill operator's own threshold (3) still holds
    for n, threshold, expected in ((2, 2, None), (3, 3, "gap_skill")):
        found = fold({}, [occurrence_of(t, t.case_id) for t in completed[:n]])
        records = eligible(found.values(), "both", gap_threshold=threshold, revise_threshold=2)
        assert len(records) == 1
        evidence = {r.signature: Evidence(tuple(completed[:n]), tuple(t for t in traces if t.success))
                    for r in records}
        design = choose_design(records, evidence, document, set(), random.Random(0))
        assert (design.proposal.operator if design else None) == expected
        if design:
            skill = design.proposal.document["skills"][0]
            assert skill["trigger"] == {"template": "refund_damaged_item"}
            assert set(design.proposal.triggers) <= {t.case_id for t in completed[:n]}
            assert choose_design(records, evidence, document, {design.proposal.key}, random.Random(0)) is None
