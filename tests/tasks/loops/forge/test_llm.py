"""FORGE's llm reflector brief: the packaged prompt file filled from the batch's imperfect
trajectories (no model is called here; offline the rule reflector is the default)."""

import json

from tasks.loops.forge.llm import SHOWN, reflect_brief
from tasks.proposers.rule_evidence import Trace


def failed(case_id, template):
    step = {"step": 0, "kind": "tool_call", "name": "list_orders", "args_json": "{}", "ok": False,
            "result_json": json.dumps({"error": {"code": "rate_limited", "message": "x", "injected": True}})}
    return Trace(case_id, template, (step,), False, {}, ("latest_cancelled",))


def test_the_brief_names_each_shown_failure_mode_and_counts_the_batch():
    ok = Trace("a/1", "apply_coupon", (), True)
    traces = [failed(f"c/{i}", "cancel_latest_order") for i in range(SHOWN + 1)] + [ok]
    text = reflect_brief(traces)
    assert "Imperfect trajectories (4 of 5 on the batch)" in text
    assert text.count("list_orders ends the episode with an injected rate_limited fault; "
                      "missing: latest_cancelled") == SHOWN
    assert "{" not in text.split("Imperfect trajectories")[1].split("\n", 1)[0]


def test_an_answer_that_is_no_harness_is_kept_as_a_refusal_with_its_call(chat_endpoint):
    """No revision (None), and the reflector keeps why with the call's raw answer and tokens
    for the step's ``llm_unusable`` candidate."""
    import random

    from schemas.configs import EvolveConfig
    from tasks.loops.forge.llm import llm_reflector

    chat_endpoint.answers.append("The agent should retry list_orders when it is rate limited.")
    reflect = llm_reflector(EvolveConfig())
    assert reflect([failed("c/1", "cancel_latest_order")], {"version": 1, "rules": [], "skills": []},
                   random.Random(0)) is None
    (why,) = reflect.refused
    assert str(why).startswith("the llm's answer is not a valid harness")
    assert (why.proposal.answer, why.proposal.tokens_in, why.proposal.tokens_out) == (
        "The agent should retry list_orders when it is rate limited.", 10, 5)
