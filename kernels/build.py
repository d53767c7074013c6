"""Dispatch once: a loss config (the `LossConfig` union) -> its `(inputs) -> LossOutputs`
function. Callers never branch on the loss type."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from pydantic import TypeAdapter

from kernels.cloopd import cloopd_pass_loss
from kernels.configs import (
    AttractRepelConfig,
    CalOPDConfig,
    CLOOPDConfig,
    DIALConfig,
    GVPOConfig,
    GVPODistillConfig,
    LossConfig,
    OPDConfig,
    PACTConfig,
    PolicyLossConfig,
    ValueLossConfig,
)
from kernels.critic import pact_critic_loss, ppo_value_loss
from kernels.distill import attract_repel_loss, cal_opd_loss, dial_opd_loss, opd_loss
from kernels.gvpo import gvpo_distill_loss, gvpo_loss
from kernels.policy_loss import policy_loss
from kernels.types import LossOutputs

LOSSES: dict[type, Callable[..., LossOutputs]] = {
    PolicyLossConfig: policy_loss,
    ValueLossConfig: ppo_value_loss,
    PACTConfig: pact_critic_loss,
    GVPOConfig: gvpo_loss,
    GVPODistillConfig: gvpo_distill_loss,
    OPDConfig: opd_loss,
    DIALConfig: dial_opd_loss,
    CalOPDConfig: cal_opd_loss,
    AttractRepelConfig: attract_repel_loss,
    CLOOPDConfig: cloopd_pass_loss,
}

_ADAPTER: TypeAdapter[Any] = TypeAdapter(LossConfig)


def parse_loss_config(data: dict[str, Any]) -> Any:
    """Validate a dict such as {"type": "dial_opd", "keep_ratio": 0.4} into its config."""
    return _ADAPTER.validate_python(data)


def build_loss(cfg: Any) -> Callable[[Any], LossOutputs]:
    """The loss function of `cfg` with the config bound: call it with the matching inputs."""
    return partial(LOSSES[type(cfg)], cfg=cfg)
