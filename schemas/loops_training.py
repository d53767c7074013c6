"""The training loops' config classes (weight updates: GRPO and its variants, PPO-PACT,
OPD, and the loops that train a policy or a memory): see `schemas.loops`, which lists every
loop."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from schemas.arenaflow import ArenaFlowConfig
from schemas.configs import EvolveConfig, LoopSpec, RunConfig
from schemas.cover import CoverConfig
from schemas.mass import MassConfig
from schemas.post_training import (
    DistillRunConfig,
    GRPOConfig,
    HarnessBanditConfig,
    PairedRolloutsConfig,
    PPOPACTConfig,
)
from schemas.rpmem import RPMemConfig

_TRAINING = "optimizer steps"


def _training_spec(name: str, paper: str) -> LoopSpec:
    return LoopSpec(name=name, modifies="weights", family="training", suites=("arith",), paper=paper,
                    budget_counts=_TRAINING, default_budget=30)


class GRPORun(RunConfig):
    SPEC = _training_spec("grpo", "GRPO / Dr. GRPO / Phantom Advantages / GRPODropout")
    loop: Literal["grpo"] = "grpo"
    grpo: GRPOConfig = GRPOConfig()

    def arith_categories(self) -> tuple[str, ...]:
        return tuple(self.grpo.categories)


class PPOPACTRun(RunConfig):
    SPEC = _training_spec("ppo_pact", "PACT: From Credit Assignment to Critic Alignment")
    loop: Literal["ppo_pact"] = "ppo_pact"
    ppo_pact: PPOPACTConfig = PPOPACTConfig()

    def arith_categories(self) -> tuple[str, ...]:
        return tuple(self.ppo_pact.categories)


class OPDRun(RunConfig):
    SPEC = _training_spec("opd", "OPD / DF-OPD / DIAL-OPD / Cal-OPD / Attract-Repel / GVPO++ / STRIDE / CLOOPD")
    loop: Literal["opd"] = "opd"
    opd: DistillRunConfig = DistillRunConfig()

    def arith_categories(self) -> tuple[str, ...]:
        return tuple(self.opd.categories)


class PairedRolloutsRun(GRPORun):
    """GRPO's parameters (`grpo`) plus the noise and probe parameters."""

    SPEC = _training_spec("paired_rollouts", "Luck Is Not Skill")
    loop: Literal["paired_rollouts"] = "paired_rollouts"
    paired_rollouts: PairedRolloutsConfig = PairedRolloutsConfig()

    @model_validator(mode="after")
    def _outcome(self) -> "PairedRolloutsRun":
        if self.grpo.reward != "outcome":
            raise ValueError("paired_rollouts injects noise into the binary outcome; set grpo.reward='outcome'")
        return self


class HarnessBanditRun(GRPORun):
    """GRPO's parameters (`grpo`; its categories become the harnesses) plus the scheduler's."""

    SPEC = _training_spec("harness_bandit", "HarnessBandit")
    loop: Literal["harness_bandit"] = "harness_bandit"
    harness_bandit: HarnessBanditConfig = HarnessBanditConfig()


class CoverRun(RunConfig):
    SPEC = LoopSpec(name="cover", modifies="weights", family="training", suites=("codemidas",),
                    paper="CoVer: self-generated tests that learn to discriminate programs, not to go easy",
                    budget_counts="REINFORCE steps (both roles, every problem)", default_budget=8)
    loop: Literal["cover"] = "cover"
    cover: CoverConfig = CoverConfig()
    evolve: EvolveConfig = EvolveConfig()
    """`proposer: llm`: the chat endpoint's parameters for the test-input writer."""


class ArenaFlowRun(RunConfig):
    SPEC = LoopSpec(name="arenaflow", modifies="weights", family="training", suites=("toolsim",),
                    paper="ArenaFlow: one comparison trains the policy and curates reusable skills",
                    budget_counts="rounds (one knockout per request, one policy update)", default_budget=6)
    loop: Literal["arenaflow"] = "arenaflow"
    arenaflow: ArenaFlowConfig = ArenaFlowConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM is the judge)."""


class MassRun(RunConfig):
    SPEC = LoopSpec(name="mass", modifies="weights", family="training", suites=("toolsim",),
                    paper="MASS: evolve the multi-agent workflow, then train it into one model",
                    budget_counts="inner workflow generations (then one distillation)", default_budget=6)
    loop: Literal["mass"] = "mass"
    mass: MassConfig = MassConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM is the workflow optimizer)."""


class RPMemRun(RunConfig):
    SPEC = LoopSpec(name="rpmem", modifies="memory", family="training", suites=("arith",),
                    paper="RPMem: Learning Long-Term Recurrent Parametric Memory Across Sessions for LLM Agents",
                    budget_counts="training rounds (stage 1 + stage 2, then the gate)", default_budget=2)
    loop: Literal["rpmem"] = "rpmem"
    rpmem: RPMemConfig = RPMemConfig()

    def arith_categories(self) -> tuple[str, ...]:
        """rpmem's cases are its own seeded users (published by its sample stage); the
        arith suite it names is checked on one category, for its tokenizer."""
        return ("add",)
