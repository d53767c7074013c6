"""ModularRSI's module wrapper, modifier, three-check gate and integration on hand-built
documents, and one round on the real toolsim simulation."""

import json

from tasks.loops.modular_rsi.evolve import (ModuleEdit, case_literals, gate_overfit, gate_run, gate_static, integrate,
                                            modify)
from tasks.loops.modular_rsi.modules import MODULES, join_modules, module_diff, module_of, split_modules, version_id
from tasks.proposers.rule_evidence import Trace

RETRY = {"id": "retry", "trigger": {"on_error": "transient_unavailable", "tool": "*"}, "action": {"retry": {"max": 2}}}
PAGE = {"id": "page", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}
FIRST = {"id": "first", "trigger": {"before": "refund_order"}, "action": {"call_first": {"tool": "get_order"}}}
SWITCH = {"id": "switch", "trigger": {"on_error": "transient_unavailable", "tool": "get_order"},
          "action": {"switch_tool": {"tool": "get_user"}}}
THEN = {"id": "then", "trigger": {"after": "cancel_order"}, "action": {"then_call": {"tool": "get_order"}}}
STALE = {"id": "fresh", "trigger": {"on_result": "get_order", "field": "stale", "equals": True},
         "action": {"retry": {"max": 1}}}
BASE = {"version": 1, "rules": [RETRY], "skills": []}
FAILED = {"step": 0, "kind": "tool_call", "name": "list_orders", "args_json": "{}", "ok": False,
          "result_json": json.dumps({"error": {"code": "transient_unavailable", "message": "", "injected": True}}),
          "reward": None, "logprob": None, "teacher_logprob": None}
LOSS = Trace(case_id="cancel_latest_order/001", template="cancel_latest_order", steps=(FAILED,), success=False)


def edit(module, document, base=BASE):
    return ModuleEdit(module, version_id(base), document, json.dumps(module_diff(base, document), sort_keys=True),
                      "k", "op", "why")


def test_every_rule_kind_has_one_module():
    assert [module_of("add_rule", r) for r in (RETRY, PAGE, FIRST, SWITCH, THEN, STALE)] == [
        "tool_wrapper", "observation", "context", "tool_wrapper", "completion", "observation"]
    assert module_of("put_skill", {"name": "s", "trigger": {"template": "x"}, "steps": []}) == "step_loop"


def test_split_and_join_round_trip_in_module_order():
    document = {"version": 1, "rules": [THEN, PAGE, RETRY], "skills": []}
    parts = split_modules(document)
    assert [len(parts[m]) for m in MODULES] == [1, 1, 0, 0, 1]
    assert join_modules(parts)["rules"] == [RETRY, PAGE, THEN]


def test_static_gate_rejects_edits_outside_their_module_and_invalid_documents():
    ok = edit("observation", {"version": 1, "rules": [RETRY, PAGE], "skills": []})
    assert gate_static(ok, BASE) == (True, "parses; only its module changed")
    wide = edit("observation", {"version": 1, "rules": [PAGE], "skills": []})  # also drops the retry rule
    assert gate_static(wide, BASE) == (False, "touches modules ['observation', 'tool_wrapper'], not only observation")
    broken = {"id": "x", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 99}}}
    verdict, reason = gate_static(edit("observation", {"version": 1, "rules": [RETRY, broken], "skills": []}), BASE)
    assert not verdict and reason.startswith("does not parse: rules[1].action.paginate.max_pages")


def test_overfit_review_rejects_template_ids_and_case_literals():
    payloads = [{"template": "cancel_latest_order", "params": {"user_id": "u-1042", "count": 2,
                                                              "address": {"city": "Lisbon"}}}]
    literals = case_literals(payloads)
    assert {"cancel_latest_order", "u-1042", "Lisbon"} <= literals and "2" not in literals
    assert gate_overfit(edit("observation", {"version": 1, "rules": [RETRY, PAGE], "skills": []}), literals)[0]
    special = dict(FIRST, trigger={"before": "refund_order", "when": {"var": "user_id", "equals": "u-1042"}})
    assert gate_overfit(edit("context", {"version": 1, "rules": [RETRY, special], "skills": []}), literals) == (
        False, "names task literals ['u-1042']")
    skill = {"name": "s", "trigger": {"template": "cancel_latest_order"}, "steps": [{"call": "get_user"}]}
    assert not gate_overfit(edit("step_loop", {"version": 1, "rules": [RETRY], "skills": [skill]}), literals)[0]


def test_run_gate_passes_when_no_fewer_tasks_are_solved():
    assert gate_run({"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 1.0}) == (True, "2/2 solved vs base 1 on a,b")
    assert gate_run({"a": 0.0, "b": 1.0}, {"a": 0.0, "b": 1.0})[0]  # passing is not improving
    assert gate_run({"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 0.0})[0]  # a swap counts as no fewer
    assert gate_run({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0})[0] is False
    assert gate_run({"a": 1.0}, {"b": 1.0})[0] is False


def test_integration_merges_modules_edited_from_one_base_and_records_conflicts():
    page = edit("observation", {"version": 1, "rules": [RETRY, PAGE], "skills": []})
    switch = edit("tool_wrapper", {"version": 1, "rules": [RETRY, SWITCH], "skills": []})
    recover = dict(FIRST, id="recover", trigger={"on_error": "transient_unavailable", "tool": "get_order"})
    context = edit("context", {"version": 1, "rules": [RETRY, recover], "skills": []})
    merged, conflicts = integrate(BASE, [context, page, switch])
    assert merged["rules"] == [RETRY, SWITCH, PAGE]  # module order; the context rule is never reached
    assert conflicts == ["context:recover shadowed by tool_wrapper on transient_unavailable/get_order"]
    assert integrate(BASE, []) == ({"version": 1, "rules": [RETRY], "skills": []}, [])


def test_modifier_edits_only_its_module_from_the_base():
    edited = modify([LOSS], {"version": 1, "rules": [], "skills": []}, "tool_wrapper")
    assert edited is not None and edited.module == "tool_wrapper"
    assert list(json.loads(edited.diff)) == ["tool_wrapper"]
    assert edited.document["rules"][0]["trigger"]["on_error"] == "transient_unavailable"
    assert modify([LOSS], {"version": 1, "rules": [], "skills": []}, "tool_wrapper", [edited.key]) != edited
    assert modify([LOSS], {"version": 1, "rules": [], "skills": []}, "completion") is None
