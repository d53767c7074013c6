"""The protocol loops' config classes (fixed arms measured under a protocol: nothing is
proposed): see `schemas.loops`, which lists every loop."""

from __future__ import annotations

from typing import Literal

from schemas.configs import EvolveConfig, LoopSpec, RunConfig
from schemas.dense import DenseConfig
from schemas.gai import GAIConfig
from schemas.loops_search import PROGRAM_SUITES
from schemas.prior_or_feedback import PriorOrFeedbackConfig
from schemas.protocols import BetterTurnsConfig, DataSenseConfig, HarnessOrModelConfig, TraceConfig


class HarnessOrModelRun(RunConfig):
    SPEC = LoopSpec(name="harness_or_model", modifies="rules", family="protocol", suites=("toolsim", "codemidas"),
                    paper="Harness or Model: fix the model, compare harnesses, count correctness separately "
                          "from finishing on time", budget_counts="noise seeds per task", default_budget=3)
    loop: Literal["harness_or_model"] = "harness_or_model"
    harness_or_model: HarnessOrModelConfig = HarnessOrModelConfig()


class BetterTurnsRun(RunConfig):
    SPEC = LoopSpec(name="better_turns", modifies="weights", family="protocol", suites=("toolsim",),
                    paper="Better Turns: answers that look more like the reference at each step still don't "
                          "complete the workflow",
                    budget_counts="models (behaviour-cloned policies, one init and shuffle seed each)",
                    default_budget=3)
    loop: Literal["better_turns"] = "better_turns"
    better_turns: BetterTurnsConfig = BetterTurnsConfig()


class TraceRun(RunConfig):
    SPEC = LoopSpec(name="trace", modifies="rules", family="protocol", suites=("toolsim",),
                    paper="TRACE: when the score changes, did the behaviour change or the ruler?",
                    budget_counts="repeats (noise seeds) per agent, condition and task", default_budget=2)
    loop: Literal["trace"] = "trace"
    trace: TraceConfig = TraceConfig()


class DataSenseRun(RunConfig):
    SPEC = LoopSpec(name="datasense", modifies="weights", family="protocol", suites=("arith",),
                    paper="DataSense-Bench: predict which data helps, then verify by training",
                    budget_counts="pools (selection runs, one pool seed each)", default_budget=2)
    loop: Literal["datasense"] = "datasense"
    datasense: DataSenseConfig = DataSenseConfig()

    def arith_categories(self) -> tuple[str, ...]:
        return tuple(self.datasense.categories)


class DenseRun(RunConfig):
    SPEC = LoopSpec(name="dense", modifies="memory", family="protocol", suites=("toolsim",),
                    paper="DENSE: turning old trajectories into usable feedback without outcome labels",
                    budget_counts="repeats (initial attempt + one retry per feedback method, per task)",
                    default_budget=3)
    loop: Literal["dense"] = "dense"
    dense: DenseConfig = DenseConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the feedback LLM writes the tree)."""


class PriorOrFeedbackRun(RunConfig):
    SPEC = LoopSpec(name="prior_or_feedback", modifies="config", family="protocol", suites=("pde1d",),
                    paper="Prior-or-Feedback: does the config proposer use the trial history, or only its prior?",
                    budget_counts="seeds (one search per condition, seed and proposer)", default_budget=3)
    loop: Literal["prior_or_feedback"] = "prior_or_feedback"
    prior_or_feedback: PriorOrFeedbackConfig = PriorOrFeedbackConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM replaces the prior proposer)."""


class GAIRun(RunConfig):
    SPEC = LoopSpec(name="gai", modifies="config", family="protocol", suites=PROGRAM_SUITES + ("toolsim",),
                    paper="GAI: Generalized Agent Iteration: tell apart improving the policy, improving the "
                          "updater, and rewriting the evaluation standard",
                    budget_counts="nothing (every selected run of the store is audited once)", default_budget=1)
    loop: Literal["gai"] = "gai"
    gai: GAIConfig = GAIConfig()
