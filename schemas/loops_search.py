"""The search loops' config classes (programs, agents' configs, schedulers over program
search): see `schemas.loops`, which lists every loop."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from schemas.algoevo import AlgoEvoConfig
from schemas.configs import EvolveConfig, LoopSpec, RunConfig
from schemas.rsi_anything import RSIAnythingConfig
from schemas.search_loops import CodeMidasConfig, DreamRSIConfig, EvoAllocConfig, ResearchWorldModelsConfig

PROGRAM_SUITES = ("circle_packing", "bin_packing", "lasso", "spin", "codemidas", "openevolve", "pde1d")
"""The suites whose candidates are programs (evolve's suites)."""


class EvolveRun(RunConfig):
    SPEC = LoopSpec(name="evolve", modifies="program", family="search", suites=PROGRAM_SUITES,
                    paper="AIDE² inner loop; FunSearch; OpenEvolve", budget_counts="child programs",
                    default_budget=64, starts_from_champion=True, budget_caps=True)
    loop: Literal["evolve"] = "evolve"
    evolve: EvolveConfig = EvolveConfig()


class Aide2Run(RunConfig):
    SPEC = LoopSpec(name="aide2", modifies="config", family="search", suites=("circle_packing+bin_packing",),
                    paper="AIDE²: recursive self-improvement of AI research agents",
                    budget_counts="outer nodes (agents)", default_budget=4)
    loop: Literal["aide2"] = "aide2"
    evolve: EvolveConfig = EvolveConfig()
    """The root agent: evolve's parameters the outer loop starts from."""
    inner_budget: int = Field(16, ge=1)
    """evolve's candidate budget per selection suite per outer node."""
    inner_suites: tuple[str, ...] = ("circle_packing", "bin_packing")
    """The selection suites a candidate agent is run on."""

    def evaluated_suites(self) -> tuple[str, ...]:
        return tuple(self.inner_suites)


class DreamRSIRun(RunConfig):
    SPEC = LoopSpec(name="dream_rsi", modifies="scheduler", family="search", suites=("circle_packing", "bin_packing"),
                    paper="Dream-RSI: rehearse new search policies on recorded search history, then return to real "
                          "tasks", budget_counts="real rounds (a dream before each after the first)", default_budget=3)
    loop: Literal["dream_rsi"] = "dream_rsi"
    dream_rsi: DreamRSIConfig = DreamRSIConfig()


class EvoAllocRun(RunConfig):
    SPEC = LoopSpec(name="evoalloc", modifies="scheduler", family="search", suites=("bin_packing", "circle_packing"),
                    paper="EvoAlloc: a self-evolving evaluation-budget allocator for program evolution",
                    budget_counts="rounds (children_per_round children each)", default_budget=6)
    loop: Literal["evoalloc"] = "evoalloc"
    evoalloc: EvoAllocConfig = EvoAllocConfig()


class AlgoEvoRun(RunConfig):
    SPEC = LoopSpec(name="algoevo", modifies="skills", family="search", suites=("circle_packing+bin_packing+lasso",),
                    paper="AlgoEvo: accumulate effective modifications from algorithm search as skills for later tasks",
                    budget_counts="child evaluations per task (algoevo.tasks, the last held out)", default_budget=16)
    loop: Literal["algoevo"] = "algoevo"
    algoevo: AlgoEvoConfig = AlgoEvoConfig()

    def evaluated_suites(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.algoevo.tasks))

    @model_validator(mode="after")
    def _mutate_only(self) -> "AlgoEvoRun":
        if self.proposer != "mutate":
            raise ValueError(f"algoevo's agent is the mutate proposer's typed operators (the llm agent is not "
                             f"built); got proposer={self.proposer!r}: use proposer='mutate'")
        if self.suite_params:
            raise ValueError("algoevo runs its tasks with their default cases; drop --param")
        return self


class ResearchWorldModelsRun(RunConfig):
    SPEC = LoopSpec(name="research_world_models", modifies="program",
                    family="search", suites=("lasso",),
                    paper="Research World Models: using past experiments to choose the next experiment",
                    budget_counts="selection rounds (16 -> 3 per environment, setting and predictor)",
                    default_budget=24)
    loop: Literal["research_world_models"] = "research_world_models"
    research_world_models: ResearchWorldModelsConfig = ResearchWorldModelsConfig()


class CodeMidasRun(RunConfig):
    SPEC = LoopSpec(name="codemidas", modifies="config", family="search", suites=("codemidas",),
                    paper="CodeMidas: turning existing functionality into reliably graded coding RL environments",
                    budget_counts="construction rounds (codemidas.per_round candidate functions each)",
                    default_budget=8, starts_from_champion=True)
    loop: Literal["codemidas"] = "codemidas"
    codemidas: CodeMidasConfig = CodeMidasConfig()
    evolve: EvolveConfig = EvolveConfig()
    """`proposer: llm`: the chat endpoint's parameters for the test-input writer."""


class RSIAnythingRun(RunConfig):
    SPEC = LoopSpec(name="rsi_anything", modifies="scheduler", family="search", suites=("bin_packing",),
                    paper="RSI-Anything: the predictor changes too, so accept the pair, not the parts",
                    budget_counts="rounds (candidates_per_round proposals, one executed)", default_budget=6)
    loop: Literal["rsi_anything"] = "rsi_anything"
    rsi_anything: RSIAnythingConfig = RSIAnythingConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM is then the coder)."""
