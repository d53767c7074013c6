import pytest

from schemas.configs import EvolveConfig
from tasks.proposers import LLMProposer, MutationProposer, make_proposer


def test_make_proposer_builds_each_kind():
    config = EvolveConfig(mutations_per_child=3)
    mutate = make_proposer("mutate", config)
    assert isinstance(mutate, MutationProposer) and mutate.config == config
    llm = make_proposer("llm", config, task_description="pack bins", entrypoint="priority")
    assert isinstance(llm, LLMProposer) and llm.entrypoint == "priority"


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (
            "optuna",
            r"unknown proposer kind 'optuna' \(optuna proposes configs, not programs\); choose one of: mutate, grammar, llm",
        ),
        ("gpt", r"unknown proposer kind 'gpt'; choose one of: mutate, grammar, llm"),
    ],
)
def test_unknown_kinds_are_named(kind, message):
    with pytest.raises(ValueError, match=message):
        make_proposer(kind, EvolveConfig())
