"""Run configs refuse combinations that cannot work and say which field to change."""

import pytest
from pydantic import ValidationError

from schemas.configs import HARNESS_LOOPS, RunConfig


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
