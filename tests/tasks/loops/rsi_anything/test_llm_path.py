"""rsi_anything's llm path offline: the run config accepts `proposer='llm'` (the chat
model is then the coder), and the coder's prompt file renders with the operator the
policy asks for; every placeholder is filled. No model is called here."""

import json

from schemas.configs import RunConfig
from tasks.loops.rsi_anything.pair import OPERATORS
from tasks.proposers.base import ParentInfo
from tasks.proposers.llm import LLMProposer, load_prompt, render_user_prompt


def test_llm_proposer_is_accepted_and_the_offline_default_is_mutate():
    assert RunConfig(loop="rsi_anything", suite="bin_packing", budget=1).proposer == "mutate"
    assert RunConfig(loop="rsi_anything", suite="bin_packing", budget=1, proposer="llm").evolve.llm_max_tokens > 0


def test_the_coder_prompt_names_the_asked_operator_and_fills_every_placeholder():
    hints = json.loads(load_prompt("rsi_anything_operators.json"))
    assert set(hints) == set(OPERATORS)
    coder = LLMProposer(RunConfig(loop="rsi_anything", suite="bin_packing", budget=1).evolve, env={},
                        user_prompt="rsi_anything_coder.txt")
    assert not coder.available()[0]  # offline: no endpoint configured
    text = render_user_prompt(coder.user_template, ParentInfo("p", "def priority(item, bins):\n    return bins\n", -5.0),
                              [], f"pack items. Edit asked for: {hints['compare']}.", "priority")
    assert "Edit asked for: change one comparison" in text and "$" not in text and "score -5" in text
