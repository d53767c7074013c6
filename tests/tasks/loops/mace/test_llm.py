from tasks.loops.mace.llm import unit_brief
from tasks.proposers.rule_evidence import Trace


def test_the_brief_names_the_failure_and_the_trajectory():
    trace = Trace("c/000", "open_ticket", ({"step": 0, "name": "create_ticket", "ok": False,
                                             "result_json": '{"error": {"code": "rate_limited"}}'},),
                  False, unmet=("ticket_open",))
    text = unit_brief(trace)
    assert "Template: open_ticket" in text and "Unmet goals: ticket_open" in text and "Broken guards: -" in text
    assert '0. create_ticket ok=False {"error": {"code": "rate_limited"}}' in text
    assert "{" not in text.split("Trajectory")[0].replace("{template}", "")  # every field filled
