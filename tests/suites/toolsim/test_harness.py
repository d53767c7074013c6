import textwrap

import pytest

from suites.toolsim import harness as harness_module
from suites.toolsim.agent import default_skill
from suites.toolsim.harness import LIMITS, HarnessError, load_harness, parse_harness
from suites.toolsim.templates import TEMPLATES

RETRY = {"trigger": {"on_error": "transient_unavailable"}, "action": {"retry": {"max": 2}}}
SKILL = {"name": "s", "trigger": {"template": "apply_coupon"}, "steps": [{"call": "apply_coupon"}]}


def _rules(*rules):
    return {"version": 1, "rules": [RETRY, *rules]}


def _skills(*skills):
    return {"version": 1, "skills": list(skills)}


# (document, the start of the error: where it is, then what is wrong)
BAD = [
    ([], "harness: must be a mapping, got list"),
    ({"rules": []}, "harness.version: is required"),
    ({"version": 2}, "harness.version: must be 1"),
    ({"version": 1, "rulez": []}, "harness.rulez: unknown field"),
    ({"version": 1, "rules": {}}, "rules: must be a list"),
    (_rules({"trigger": {"on_error": "timeout"}, "action": {"retry": {"max": 1}}}),
     "rules[1].trigger.on_error: unknown error code 'timeout'"),
    (_rules({"trigger": {"on_error": "not_found", "tool": "fetch"}, "action": {"retry": {"max": 1}}}),
     "rules[1].trigger.tool: unknown tool 'fetch'"),
    (_rules({"trigger": {"before": "get_order", "after": "get_order"}, "action": {"paginate": {}}}),
     "rules[1].trigger: must have exactly one of"),
    (_rules({"trigger": {"before": "get_order", "tool": "x"}, "action": {"paginate": {}}}),
     "rules[1].trigger.tool: not allowed with before"),
    (_rules({"trigger": {"on_result": "get_order", "field": "stale"}, "action": {"retry": {"max": 1}}}),
     "rules[1].trigger.equals: is required"),
    (_rules({"trigger": {"on_error": "not_found"}, "action": {"retry": {"max": 9}}}),
     "rules[1].action.retry.max: must be an integer in 1..5, got 9"),
    (_rules({"trigger": {"on_error": "not_found"}, "action": {"retry": {"max": True}}}),
     "rules[1].action.retry.max: must be an integer"),
    (_rules({"trigger": {"on_error": "not_found"}, "action": {"retry": {"max": 1, "backof": 1}}}),
     "rules[1].action.retry.backof: unknown field"),
    (_rules({"trigger": {"before": "refund_order"}, "action": {"paginate": {}}}),
     "rules[1].action.paginate: refund_order has no page or cursor argument"),
    (_rules({"trigger": {"after": "create_ticket"}, "action": {"retry": {"max": 1}}}),
     "rules[1].action.retry: needs a trigger of kind ['on_error', 'on_result'], not after"),
    (_rules({"trigger": {"on_error": "not_found"}, "action": {"switch_tool": {"tool": "search_users",
                                                                             "args": {"querry": "$email"}}}}),
     "rules[1].action.switch_tool.args.querry: search_users has no argument 'querry'"),
    (_rules({"trigger": {"after": "create_ticket", "when": {"var": "tier", "is": "vip"}},
             "action": {"then_call": {"tool": "escalate_ticket"}}}),
     "rules[1].trigger.when.is: unknown field"),
    (_rules({"trigger": {"after": "create_ticket", "when": {"var": "tier"}},
             "action": {"then_call": {"tool": "escalate_ticket"}}}),
     "rules[1].trigger.when: must have exactly one of"),
    (_rules({"trigger": {"on_error": "not_found"}}), "rules[1].action: is required"),
    (_rules({"trigger": {"on_error": "not_found"}, "action": {"retry": {"max": 1}}, "id": ""}),
     "rules[1].id: must be a non-empty string"),
    (_skills({**SKILL, "trigger": {"template": "refund_everything"}}),
     "skills[0].trigger.template: unknown template 'refund_everything'"),
    (_skills(SKILL, {**SKILL, "name": "t"}), "skills[1].trigger.template: apply_coupon already has a skill (skills[0])"),
    (_skills({**SKILL, "steps": []}), "skills[0].steps: must be a list of 1..40 entries"),
    (_skills({**SKILL, "steps": [{"call": "apply_coupon"}, {"call": "apply_coupon", "pick": {"from": "x"}}]}),
     "skills[0].steps[1]: must have exactly one of ['call', 'pick']"),
    (_skills({**SKILL, "steps": [{"pick": {"from": "orders", "take": "middle"}}]}),
     "skills[0].steps[0].pick.take: must be 'first' or 'last'"),
    (_skills({**SKILL, "steps": [{"pick": {"from": "orders"}, "args": {}}]}), "skills[0].steps[0].args: a pick step"),
    (_skills({**SKILL, "steps": [{"call": "apply_coupon", "args": {"code": ["A", "B"]}}]}),
     "skills[0].steps[0].args.code: must be a string, number"),
    (_skills({**SKILL, "checks": [{"call": "get_order", "expect": {}}]}),
     "skills[0].checks[0].expect: must name at least one field"),
    (_skills({**SKILL, "retries": 4}), "skills[0].retries: must be an integer in 0..3"),
    ("rules: [unclosed", "harness: not valid YAML or JSON"),
]


@pytest.mark.parametrize("doc, message", BAD, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(BAD)])
def test_parse_errors_name_the_rule_or_skill_and_field(doc, message):
    with pytest.raises(HarnessError) as caught:
        load_harness(doc)
    assert str(caught.value).startswith(message), str(caught.value)


def test_size_limits_bound_what_a_candidate_can_make_the_parent_simulate():
    with pytest.raises(HarnessError, match=r"rules: must be a list of 0..64 entries"):
        parse_harness({"version": 1, "rules": [RETRY] * (LIMITS["rules"] + 1)})
    with pytest.raises(HarnessError, match="the limit is 65536"):
        load_harness("#" * (LIMITS["document"] + 1))


def test_yaml_text_and_mapping_parse_to_the_same_harness():
    text = """
version: 1
rules:
  - id: vip
    trigger: {after: create_ticket, when: {var: tier, equals: vip}}
    action: {then_call: {tool: escalate_ticket}}
skills:
  - name: coupon
    trigger: {template: apply_coupon}
    steps:
      - call: apply_coupon
        args: {code: $code}
"""
    doc = {
        "version": 1,
        "rules": [{"id": "vip", "trigger": {"after": "create_ticket", "when": {"var": "tier", "equals": "vip"}},
                   "action": {"then_call": {"tool": "escalate_ticket"}}}],
        "skills": [{"name": "coupon", "trigger": {"template": "apply_coupon"},
                    "steps": [{"call": "apply_coupon", "args": {"code": "$code"}}]}],
    }
    assert load_harness(text) == load_harness(doc)
    harness = load_harness(doc)
    assert harness.rules[0].rule_id == "vip"
    assert harness.skill_for("apply_coupon").name == "coupon" and harness.skill_for("open_ticket") is None


def test_rule_ids_default_to_their_position():
    assert parse_harness(_rules()).rules[0].rule_id == "rules[0]"


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_default_plans_are_valid_skills(template):
    assert default_skill(template).steps


def test_the_documented_example_parses():
    example = textwrap.dedent(harness_module.__doc__.split("\n\n")[2])
    harness = load_harness(example)
    assert [r.rule_id for r in harness.rules] == ["retry-transient"]
    assert harness.skill_for("refund_damaged_item").checks[0].expect == (("status", "delivered"),)
