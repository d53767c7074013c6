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


def test_answers_that_give_no_unit_are_kept_with_their_calls(chat_endpoint):
    """A bare ``SEARCH`` (the served 0.5B model's answer: no edit) and a program that adds
    two rules (not one unit); neither is mined, both are kept with their calls."""
    import random

    from schemas.configs import EvolveConfig
    from tasks.loops.mace.llm import llm_units

    rules = ('{"id": "a", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}, '
             '{"id": "b", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}')
    empty = f"```python\ndef harness():\n    return {{'rules': [{rules}], 'skills': [], 'version': 1}}\n```"
    chat_endpoint.answers += ["SEARCH", empty]
    failed = Trace("c/000", "open_ticket", (), False, unmet=("ticket_open",))
    refused = []
    assert llm_units([failed, failed], EvolveConfig(), random.Random(0), refused) == []
    assert [str(r).split(":")[0] for r in refused] == ["the llm's answer is not a valid harness",
                                                       "the llm's answer adds 2 items, not one unit"]
    assert [r.proposal.answer for r in refused] == ["SEARCH", empty] and all(r.proposal.tokens_out == 5 for r in refused)
