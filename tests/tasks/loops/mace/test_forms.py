
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from suites.toolsim.suite import ToolSim
from suites.toolsim.templates import get_template
from tasks.loops.mace.forms import FORMS, harness_for, render_rule, render_skill
from tasks.loops.mace.memory import Unit

RETRY = {"id": "r", "trigger": {"on_error": "rate_limited", "tool": "create_ticket"}, "action": {"retry": {"max": 2}}}
PAGES = {"id": "p", "trigger": {"before": "list_orders", "when": {"var": "tier", "equals": "vip"}},
         "action": {"paginate": {"max_pages": 10}}}


def test_guideline_weakens_checklist_keeps_constraint_hardens():
    assert render_rule(RETRY, "guideline")["action"] == {"retry": {"max": 1}}
    assert render_rule(RETRY, "checklist") == RETRY
    assert render_rule(RETRY, "constraint") == {"id": "r", "trigger": {"on_error": "rate_limited", "tool": "*"},
                                                "action": {"retry": {"max": 4}}}
    assert render_rule(PAGES, "guideline")["action"] == {"paginate": {"max_pages": 3}}
    assert render_rule(PAGES, "constraint") == {"id": "p", "trigger": {"before": "list_orders"},
                                                "action": {"paginate": {"max_pages": 20}}}


def test_skill_forms():
    skill = {"name": "s", "trigger": {"template": "t"}, "steps": [{"call": "get_order"}],
             "checks": [{"call": "get_order", "expect": {"status": "cancelled"}}], "retries": 0}
    assert "checks" not in render_skill(skill, "guideline")
    assert render_skill(skill, "checklist")["retries"] == 1
    assert render_skill(skill, "constraint") == skill


def test_a_checklist_re_runs_the_default_plan_once():
    template = "open_ticket"
    unit = Unit("u1", "action", "rule", RETRY, (template,), "")
    harness = harness_for([("action", [unit], "checklist"), ("intake", [], "none")], template)
    assert harness["rules"] == [RETRY]
    assert harness["skills"] == [{"name": "checklist-open_ticket", "trigger": {"template": template},
                                  "steps": list(get_template(template).plan), "retries": 1}]
    load_harness(harness)
    assert harness_for([("action", [unit], "guideline")], template)["skills"] == []


def test_the_three_forms_change_behaviour_on_real_requests():
    """Over the train requests, each pair of forms of the same unit set gives some
    request a different trajectory."""
    cases = [c for c in ToolSim(instances_per_template=10).cases() if c.split == "train"]
    rule = {"id": "x", "trigger": {"on_error": "transient_unavailable", "tool": "get_order"},
            "action": {"retry": {"max": 2}}}
    unit = Unit("u", "lookup", "rule", rule, (), "")
    runs = {form: [run_episode(c.payload, load_harness(harness_for([("lookup", [unit], form)],
                                                                   c.payload["template"]))).steps
                   for c in cases] for form in FORMS}
    for a in FORMS:
        for b in FORMS:
            assert a == b or runs[a] != runs[b]
