"""Run configs refuse combinations that cannot work and say which field to change."""

import pytest
from pydantic import ValidationError

from schemas.configs import RunConfig
from schemas.loops import HARNESS_LOOPS


@pytest.mark.parametrize("loop", HARNESS_LOOPS)
def test_harness_loops_refuse_the_config_tuner_as_proposer(loop):
    with pytest.raises(ValidationError, match=f"proposer='optuna' tunes configs, but {loop} edits a harness"):
        RunConfig(loop=loop, suite="toolsim", budget=1, proposer="optuna")
    assert RunConfig(loop=loop, suite="toolsim", budget=1, proposer="llm").proposer == "llm"


def test_dask_address_must_be_a_scheduler_url():
    with pytest.raises(ValidationError, match="tcp://127.0.0.1:8786"):
        RunConfig(loop="evolve", suite="circle_packing", budget=1, dask_address="localhost:8786")


def test_unknown_fields_are_errors():
    with pytest.raises(ValidationError, match="budgett"):
        RunConfig(loop="evolve", suite="circle_packing", budget=1, budgett=2)


def test_a_config_is_its_loops_own_class_with_only_its_sections():
    from schemas.loops import GRPORun, HarnessBanditRun, SelfHealingRun

    grpo = RunConfig(loop="grpo", suite="arith", budget=2)
    assert type(grpo) is GRPORun and "heal" not in GRPORun.model_fields
    assert type(RunConfig.model_validate(grpo.model_dump())) is GRPORun
    healing = RunConfig.model_validate({"loop": "self_healing", "suite": "toolsim", "budget": 1,
                                        "heal": {"accept_all": True}})
    assert type(healing) is SelfHealingRun and healing.heal.accept_all is True
    bandit = RunConfig(loop="harness_bandit", suite="arith", budget=1)
    assert type(bandit) is HarnessBanditRun and bandit.arith_categories() == ("add",)


def test_another_loops_section_is_an_error_naming_it():
    with pytest.raises(ValidationError, match="grpo\n  Extra inputs are not permitted"):
        RunConfig(loop="evolve", suite="circle_packing", budget=1, grpo={"lr": 1e-3})
    with pytest.raises(ValueError, match="unknown loop 'evolv'; loops: evolve, aide2"):
        RunConfig(loop="evolv", suite="circle_packing", budget=1)


def test_a_config_stored_with_every_loops_sections_still_loads():
    """Runs stored before configs were split per loop carry all sections: the ones the
    loop does not have are dropped, the loop's own are kept."""
    stored = {"loop": "opd", "suite": "arith", "budget": 3, "grpo": {"lr": 0.5}, "heal": {}, "inner_budget": 16,
              "opd": {"method": "dial"}}
    config = RunConfig.from_stored(stored)
    assert config.opd.method == "dial" and not hasattr(config, "grpo") and config.budget == 3


def test_the_arith_categories_come_from_the_loops_own_section():
    assert RunConfig(loop="opd", suite="arith", budget=1, opd={"categories": ["sub"]}).arith_categories() == ("sub",)
    with pytest.raises(ValueError, match="evolve does not train on arith"):
        RunConfig(loop="evolve", suite="spin", budget=1).arith_categories()
