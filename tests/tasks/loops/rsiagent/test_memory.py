import random

from suites.toolsim.harness import parse_harness
from suites.toolsim.suite import ToolSim
from tasks.loops.rsiagent.memory import (EMPTY, condition_of, entries_of, harness_of, make_entry, memory_doc,
                                         memory_id, revise, signature)
from tasks.loops.rsiagent.practice import edited_items, execute, practice_case, recover, rule_writer, verify
from tasks.proposers.rule_evidence import Trace
from schemas.ids import content_id

RETRY = {"id": "r1", "trigger": {"on_error": "rate_limited", "tool": "get_order"},
         "action": {"retry": {"max": 3, "backoff": 2}}}


def _step(name, ok, error=None):
    result = '{"error": {"code": "%s"}}' % error if error else "{}"
    return {"step": 0, "kind": "tool_call", "name": name, "args_json": "{}", "result_json": result, "ok": ok}


def test_signature_names_the_failing_step_or_the_goal():
    assert signature(Trace("c", "t", (_step("get_order", False, "rate_limited"),), False)) == "get_order:rate_limited"
    assert signature(Trace("c", "t", (_step("get_order", True),), False, unmet=("refunded",))) == "unmet:refunded"
    assert signature(Trace("c", "t", (_step("get_order", True),), False, broken=("no_double",))) == "broken:no_double"
    assert signature(Trace("c", "t", (), True)) is None


def test_condition_is_tool_event_predicate():
    assert condition_of("rule", RETRY, "x") == {"tool": "get_order", "event": "rate_limited", "predicate": "null"}
    before = {"trigger": {"before": "list_orders", "when": {"var": "n", "equals": 1}}, "action": {"paginate": {}}}
    assert condition_of("rule", before, "x") == {"tool": "list_orders", "event": "before",
                                                 "predicate": '{"equals": 1, "var": "n"}'}
    assert condition_of("skill", {"name": "s"}, "refund")["predicate"] == "template == refund"


def test_a_recovery_of_the_same_condition_revises_the_entry():
    first = make_entry("rule", RETRY, "t", "get_order:rate_limited", ["run1"])
    longer = {**RETRY, "action": {"retry": {"max": 5, "backoff": 4}}}
    second = make_entry("rule", longer, "t", "get_order:rate_limited", ["run2"])
    other = make_entry("rule", {**RETRY, "trigger": {"on_error": "transient_unavailable", "tool": "*"}}, "t", "c", [])
    assert first.entry_id == second.entry_id == content_id(
        '{"event": "rate_limited", "predicate": "null", "tool": "get_order"}')
    assert first.action["id"] == f"mem-{first.entry_id[:10]}"
    memory = revise([first], [second, other], max_entries=8)
    assert len(memory) == 2 and next(e for e in memory if e.entry_id == first.entry_id).source_runs == ("run2",)
    assert revise([first], [other], max_entries=1) == [first]  # full: only revisions get in
    assert revise([first], [second], max_entries=1)[0].action["action"]["retry"]["max"] == 5


def test_memory_id_is_content_and_round_trips():
    a = make_entry("rule", RETRY, "t", "c", ["r"])
    b = make_entry("skill", {"name": "plan-x", "trigger": {"template": "cancel_latest_order"},
                             "steps": [{"call": "get_user"}]}, "cancel_latest_order", "c", ["r"])
    assert memory_id([a, b]) == memory_id([b, a]) != memory_id([a])
    assert entries_of(memory_doc([a, b])) == sorted([a, b], key=lambda e: e.entry_id)
    harness = harness_of([a, b])
    parse_harness(harness)
    assert [r["id"] for r in harness["rules"]] == [a.action["id"]] and harness["skills"][0]["name"] == "plan-x"
    assert harness_of([]) == EMPTY


def test_edited_items_ignore_renamed_ids():
    before = {"rules": [{**RETRY, "id": "mem-1"}], "skills": []}
    after = {"rules": [{**RETRY, "id": "other"}, {**RETRY, "id": "n", "trigger": {"on_error": "x"}}], "skills": []}
    assert edited_items(before, after) == [("rule", after["rules"][1])]


def test_recovery_is_kept_only_when_the_verifier_passes_the_rerun():
    train = [c for c in ToolSim(instances_per_template=5).cases() if c.split == "train"]
    outcomes = []
    for source in train:
        case = practice_case(source, "faulty", 7)
        failed = verify(case, execute(case, EMPTY))
        if failed.passed:
            continue
        rec = recover(case, [], failed, "run", 48, rule_writer, random.Random(0))
        assert rec is not None and rec.entries and rec.memory == sorted(rec.entries, key=lambda e: e.entry_id)
        rerun = verify(case, execute(case, harness_of(rec.memory)))  # the verdict is the memory's own rerun
        assert rerun.passed == rec.verdict.passed
        outcomes.append(rec.verdict.passed)
    assert True in outcomes and False in outcomes


def test_the_llm_brief_fills_every_field_of_the_prompt_file():
    from tasks.loops.rsiagent.llm import memory_brief

    trace = Trace("c", "refund_unshipped_order", (_step("refund_order", False, "precondition_failed"),), False,
                  unmet=("refunded",))
    text = memory_brief(trace)
    assert "Template: refund_unshipped_order" in text and "refund_order:precondition_failed" in text
    assert "Unmet goals: refunded" in text and "Broken guards: -" in text and "{" not in text.split("Trajectory")[0]


def test_the_llm_writer_keeps_every_answer_it_could_not_use_with_why(chat_endpoint):
    from schemas.configs import EvolveConfig
    from tasks.loops.rsiagent.llm import llm_writer

    trace = Trace("c", "refund_unshipped_order", (_step("refund_order", False, "precondition_failed"),), False,
                  unmet=("refunded",))
    chat_endpoint.answers.append("I would add a retry rule.")  # no harness in the answer
    writer = llm_writer(EvolveConfig())
    assert writer(trace, EMPTY, random.Random(0)) is None
    assert len(writer.refused) == 1 and writer.refused[0].proposal.answer == "I would add a retry rule."
    assert str(writer.refused[0])  # the reason distill records on its llm_unusable candidate
