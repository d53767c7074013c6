import typing

import pytest
import torch
from pydantic import ValidationError
from torch.testing import assert_close

from kernels.build import LOSSES, build_loss, parse_loss_config
from kernels.configs import DIALConfig, LossConfig, TinyLMConfig
from kernels.distill import dial_opd_loss
from kernels.types import DistillInputs


def test_every_loss_config_has_exactly_one_loss():
    union_members = set(typing.get_args(typing.get_args(LossConfig)[0]))
    assert union_members == set(LOSSES)


def test_parse_then_build_dispatches_on_the_type():
    cfg = parse_loss_config({"type": "dial_opd", "keep_ratio": 0.5, "beta": 1.0})
    assert cfg == DIALConfig(keep_ratio=0.5, beta=1.0)
    inp = DistillInputs(torch.tensor([[-1.0, -2.0, -0.5, -3.0]]), torch.tensor([[-0.5, -4.0, -0.5, -1.0]]), torch.ones(1, 4, dtype=torch.bool))
    assert_close(build_loss(cfg)(inp).loss, dial_opd_loss(inp, cfg).loss)


@pytest.mark.parametrize(
    "data",
    [{"type": "dial_opd", "keep_ratio": 0.0}, {"type": "ppo_clip", "aggregation": "sum"}, {"type": "nope"}, {"type": "opd", "extra": 1}],
)
def test_invalid_loss_configs_are_refused(data):
    with pytest.raises(ValidationError):
        parse_loss_config(data)


def test_model_config_names_the_fix():
    with pytest.raises(ValidationError, match="divisible by n_heads"):
        TinyLMConfig(d_model=30, n_heads=4)
