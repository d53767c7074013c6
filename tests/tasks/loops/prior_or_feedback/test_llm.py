"""The `proposer: llm` path without a model: the prompt holds the task text, the schema and
the history table; answers are parsed into a valid config or a recorded reason; a call
that fails (nothing listens on the port) is data, and the prior's proposal stands."""

import pytest

from schemas.configs import EvolveConfig
from suites.pde1d.space import CONFIG_SPACE
from tasks.loops.prior_or_feedback.llm import LLMConfigProposer, parse_config, render
from tasks.loops.prior_or_feedback.proposers import propose
from tasks.loops.prior_or_feedback.protocol import replay, search, sensitivity
from tasks.proposers import ProposerUnavailable

TASK = {"source": ("burgers", 0.1), "target": ("burgers", 0.02)}
GOOD = {"lr": 0.01, "optimizer": "adam", "loss": "mse", "epochs": 100, "modes": 16, "weight_decay": 0.0}


def test_the_prompt_has_task_schema_and_history_and_the_notation_control_only_reformats():
    history = [(GOOD, 0.0123456), ({**GOOD, "loss": "l1"}, 0.5)]
    text = render(TASK, history, 3, 20)
    assert "target: burgers equation, viscosity nu = 0.02" in text and "this is trial 3" in text
    assert all(f"- {param}:" in text for param, _, _ in CONFIG_SPACE)
    assert '1 | {"epochs": 100, "loss": "mse"' in text and "| 0.012346" in text
    sci = render(TASK, history, 3, 20, notation=".3e")
    assert "| 1.235e-02" in sci and sci.replace("1.235e-02", "0.012346").replace("5.000e-01", "0.500000") == text
    assert "(none yet)" in render(TASK, [], 1, 20)


@pytest.mark.parametrize("answer, why", [
    ("```json\n" + '{"lr": 0.01, "optimizer": "adam", "loss": "mse", "epochs": 100, "modes": 16, '
     '"weight_decay": 0.0}\n```', ""),
    ("lr 0.01 please", "not JSON"),
    ('{"lr": 0.01}', "optimizer"),
    ('{"lr": 50.0, "optimizer": "adam", "loss": "mse", "epochs": 100, "modes": 16, "weight_decay": 0.0}', "lr"),
    ('{"lr": 0.01, "optimizer": "adam", "loss": "mse", "epochs": 100, "modes": 16, "weight_decay": 0.0, '
     '"batch": 8}', "unknown fields ['batch']"),
])
def test_answers_parse_to_a_valid_config_or_a_reason(answer, why):
    config, reason = parse_config(answer)
    if why:
        assert config is None and why in reason
    else:
        assert config == GOOD and reason == ""


def test_without_an_endpoint_the_llm_path_is_unavailable(monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    with pytest.raises(ProposerUnavailable, match="RATCHET_LLM_BASE_URL"):
        LLMConfigProposer(EvolveConfig(), 20)


def test_a_failed_call_is_recorded_and_the_priors_proposal_runs(monkeypatch):
    monkeypatch.setenv("RATCHET_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: nothing answers
    monkeypatch.setenv("RATCHET_LLM_MODEL", "m")
    proposer = LLMConfigProposer(EvolveConfig(llm_timeout_s=2.0), 3)
    trials = search(proposer, TASK, 0, 3, lambda c: c["lr"], startup=2)
    assert all(r["error"].startswith("call failed") for r in trials)
    assert trials[0]["config"] == propose("prior", TASK, [], 0, 1)
    rows = replay(proposer, TASK, 0, trials, [3], 1, 2)
    assert [r["intervention"] for r in rows] == ["permuted", "control"] and all(r["error"] for r in rows)
    assert sensitivity(rows) is None  # no replay of the proposer's own answer to measure



def test_under_proposer_llm_the_llm_takes_the_priors_place():
    from tasks.loops.prior_or_feedback.protocol import proposers_of

    assert proposers_of(("random", "tpe", "prior"), "mutate") == ("random", "tpe", "prior")
    assert proposers_of(("random", "tpe", "prior"), "llm") == ("random", "tpe", "llm")
    assert proposers_of(("random", "tpe"), "llm") == ("random", "tpe")
