"""Each loop in one place: its config class, which carries its spec (paper, what it
modifies, its suites, what `--budget` counts, its default budget) and only the parameter
sections the loop reads. `LOOP_CONFIGS` is the one list of loops: `LOOP_SPECS`,
`flows.LOOPS`, the CLI's `ratchet loops`, `--set` and the suite checks all derive from
it, so adding a loop adds its class here (and its flow module `flows.<loop>`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from schemas.admission import DesignerConfig, GrowConfig, HealConfig, MedRSIConfig
from schemas.configs import EvolveConfig, LoopSpec, RunConfig
from schemas.post_training import (
    DistillRunConfig,
    GRPOConfig,
    HarnessBanditConfig,
    PairedRolloutsConfig,
    PPOPACTConfig,
)
from schemas.algoevo import AlgoEvoConfig
from schemas.arenaflow import ArenaFlowConfig
from schemas.prior_or_feedback import PriorOrFeedbackConfig
from schemas.mass import MassConfig
from schemas.cover import CoverConfig
from schemas.dense import DenseConfig
from schemas.gai import GAIConfig
from schemas.graphskillevo import GraphSkillEvoConfig
from schemas.modular_rsi import ModularRSIConfig
from schemas.moscopt import MoscoptConfig
from schemas.skilllift import SkillLiftConfig
from schemas.rsi_anything import RSIAnythingConfig
from schemas.mace import MaceConfig
from schemas.rsiagent import RSIAgentConfig
from schemas.forge import ForgeConfig
from schemas.limbo import LimboConfig
from schemas.rpmem import RPMemConfig
from schemas.protocols import BetterTurnsConfig, DataSenseConfig, HarnessOrModelConfig, TraceConfig
from schemas.search_loops import CodeMidasConfig, DreamRSIConfig, EvoAllocConfig, ResearchWorldModelsConfig

_PROGRAM_SUITES = ("circle_packing", "bin_packing", "lasso", "spin", "codemidas", "openevolve", "pde1d")
_TRAINING = "optimizer steps"


class EvolveRun(RunConfig):
    SPEC = LoopSpec(name="evolve", modifies="program", family="search", suites=_PROGRAM_SUITES,
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


class _HarnessRun(RunConfig):
    """The harness loops (toolsim harness edits). `evolve` holds the chat endpoint's
    parameters when `proposer='llm'`."""

    evolve: EvolveConfig = EvolveConfig()


def _harness_spec(name: str, modifies: str, paper: str, budget_counts: str, budget_caps: bool = False) -> LoopSpec:
    return LoopSpec(name=name, modifies=modifies, family="harness", suites=("toolsim",), paper=paper,
                    budget_counts=budget_counts, default_budget=32, starts_from_champion=True, budget_caps=budget_caps)


class SelfHealingRun(_HarnessRun):
    SPEC = _harness_spec("self_healing", "rules", "Self-Healing Harness: Runtime Oversight of Agent "
                         "Self-Modification", "heal rounds", budget_caps=True)
    loop: Literal["self_healing"] = "self_healing"
    heal: HealConfig = HealConfig()


class GrowingHarnessRun(_HarnessRun):
    SPEC = _harness_spec("growing_harness", "rules", "Grow the Harness, Not the Context: From Strategy-Free "
                         "Scaffolds to Reusable Specialist Agents", "repair steps")
    loop: Literal["growing_harness"] = "growing_harness"
    grow: GrowConfig = GrowConfig()


class MedRSIRun(_HarnessRun):
    SPEC = _harness_spec("medrsi", "rules", "MedRSI: Recursive Self-Improvement for Medical Agents via "
                         "Clinically Aligned Self-Evolution", "discovery rounds")
    loop: Literal["medrsi"] = "medrsi"
    medrsi: MedRSIConfig = MedRSIConfig()


class DesignerRSIRun(_HarnessRun):
    SPEC = _harness_spec("designer_rsi", "skills", "Designer-RSI: Evolving Procedural Memory from User "
                         "Traffic for Agentic Graphic Design", "traffic rounds")
    loop: Literal["designer_rsi"] = "designer_rsi"
    designer: DesignerConfig = DesignerConfig()


class GraphSkillEvoRun(_HarnessRun):
    SPEC = LoopSpec(name="graphskillevo", modifies="skills", family="harness", suites=("toolsim",),
                    paper="GraphSkillEvo: Turning Skill Manuals into Crossover-able Workflow Graphs",
                    budget_counts="generations (population x batch train runs each)", default_budget=5,
                    starts_from_champion=True)
    loop: Literal["graphskillevo"] = "graphskillevo"
    graphskillevo: GraphSkillEvoConfig = GraphSkillEvoConfig()


class ModularRSIRun(_HarnessRun):
    SPEC = LoopSpec(name="modular_rsi", modifies="rules", family="harness", suites=("toolsim",),
                    paper="Generalizable harness self-improvement: find recurring execution defects, then "
                          "evolve each module separately (ModularRSI)",
                    budget_counts="evolution rounds (batch rollouts, five module edits, integration)",
                    default_budget=4, starts_from_champion=True)
    loop: Literal["modular_rsi"] = "modular_rsi"
    modular_rsi: ModularRSIConfig = ModularRSIConfig()


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


class CoverRun(RunConfig):
    SPEC = LoopSpec(name="cover", modifies="weights", family="training", suites=("codemidas",),
                    paper="CoVer: self-generated tests that learn to discriminate programs, not to go easy",
                    budget_counts="REINFORCE steps (both roles, every problem)", default_budget=8)
    loop: Literal["cover"] = "cover"
    cover: CoverConfig = CoverConfig()
    evolve: EvolveConfig = EvolveConfig()
    """`proposer: llm`: the chat endpoint's parameters for the test-input writer."""


class CodeMidasRun(RunConfig):
    SPEC = LoopSpec(name="codemidas", modifies="config", family="search", suites=("codemidas",),
                    paper="CodeMidas: turning existing functionality into reliably graded coding RL environments",
                    budget_counts="construction rounds (codemidas.per_round candidate functions each)",
                    default_budget=8, starts_from_champion=True)
    loop: Literal["codemidas"] = "codemidas"
    codemidas: CodeMidasConfig = CodeMidasConfig()
    evolve: EvolveConfig = EvolveConfig()
    """`proposer: llm`: the chat endpoint's parameters for the test-input writer."""


class DenseRun(RunConfig):
    SPEC = LoopSpec(name="dense", modifies="memory", family="protocol", suites=("toolsim",),
                    paper="DENSE: turning old trajectories into usable feedback without outcome labels",
                    budget_counts="repeats (initial attempt + one retry per feedback method, per task)",
                    default_budget=3)
    loop: Literal["dense"] = "dense"
    dense: DenseConfig = DenseConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the feedback LLM writes the tree)."""


class SkillLiftRun(_HarnessRun):
    SPEC = LoopSpec(name="skilllift", modifies="skills", family="harness", suites=("toolsim",),
                    paper="SkillLift: cheap skill edits first, then calibrate the scoring rubric with real execution",
                    budget_counts="outer rounds (an inner rubric-only search, then top-k real runs)",
                    default_budget=6, starts_from_champion=True)
    loop: Literal["skilllift"] = "skilllift"
    skilllift: SkillLiftConfig = SkillLiftConfig()


class RSIAnythingRun(RunConfig):
    SPEC = LoopSpec(name="rsi_anything", modifies="scheduler", family="search", suites=("bin_packing",),
                    paper="RSI-Anything: the predictor changes too, so accept the pair, not the parts",
                    budget_counts="rounds (candidates_per_round proposals, one executed)", default_budget=6)
    loop: Literal["rsi_anything"] = "rsi_anything"
    rsi_anything: RSIAnythingConfig = RSIAnythingConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM is then the coder)."""


class MoscoptRun(_HarnessRun):
    SPEC = LoopSpec(name="moscopt", modifies="skills", family="harness", suites=("toolsim",),
                    paper="MOSCOPT: improve the skills and also when to load which skills",
                    budget_counts="edit rounds (one gated edit of the skill pool or the gating skill)",
                    default_budget=12, starts_from_champion=False)
    loop: Literal["moscopt"] = "moscopt"
    moscopt: MoscoptConfig = MoscoptConfig()


class RSIAgentRun(_HarnessRun):
    SPEC = LoopSpec(name="rsiagent", modifies="memory", family="harness", suites=("toolsim",),
                    paper="RSIAgent: practice in a new environment first, then carry verified experience to "
                          "target tasks", budget_counts="practice rounds (breadth, then depth)", default_budget=6,
                    starts_from_champion=True)
    loop: Literal["rsiagent"] = "rsiagent"
    rsiagent: RSIAgentConfig = RSIAgentConfig()


class ForgeRun(_HarnessRun):
    SPEC = LoopSpec(name="forge", modifies="rules", family="harness", suites=("toolsim",),
                    paper="FORGE: one failure tells the system both how to revise the prompt and which training "
                          "data to add", budget_counts="optimisation steps (one batch, one prompt gate)",
                    default_budget=8, starts_from_champion=True)
    loop: Literal["forge"] = "forge"
    forge: ForgeConfig = ForgeConfig()


class LimboRun(_HarnessRun):
    SPEC = LoopSpec(name="limbo", modifies="memory", family="harness", suites=("toolsim",),
                    paper="LIMBO: learn online when reading past experience is worth the budget",
                    budget_counts="stream requests (one controller choice each)", default_budget=500,
                    starts_from_champion=False)
    loop: Literal["limbo"] = "limbo"
    limbo: LimboConfig = LimboConfig()


class ArenaFlowRun(RunConfig):
    SPEC = LoopSpec(name="arenaflow", modifies="weights", family="training", suites=("toolsim",),
                    paper="ArenaFlow: one comparison trains the policy and curates reusable skills",
                    budget_counts="rounds (one knockout per request, one policy update)", default_budget=6)
    loop: Literal["arenaflow"] = "arenaflow"
    arenaflow: ArenaFlowConfig = ArenaFlowConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM is the judge)."""


class PriorOrFeedbackRun(RunConfig):
    SPEC = LoopSpec(name="prior_or_feedback", modifies="config", family="protocol", suites=("pde1d",),
                    paper="Prior-or-Feedback: does the config proposer use the trial history, or only its prior?",
                    budget_counts="seeds (one search per condition, seed and proposer)", default_budget=3)
    loop: Literal["prior_or_feedback"] = "prior_or_feedback"
    prior_or_feedback: PriorOrFeedbackConfig = PriorOrFeedbackConfig()
    evolve: EvolveConfig = EvolveConfig()
    """The chat endpoint's parameters when `proposer='llm'` (the LLM replaces the prior proposer)."""


class GAIRun(RunConfig):
    SPEC = LoopSpec(name="gai", modifies="config", family="protocol", suites=_PROGRAM_SUITES + ("toolsim",),
                    paper="GAI: Generalized Agent Iteration: tell apart improving the policy, improving the "
                          "updater, and rewriting the evaluation standard",
                    budget_counts="nothing (every selected run of the store is audited once)", default_budget=1)
    loop: Literal["gai"] = "gai"
    gai: GAIConfig = GAIConfig()


class MaceRun(_HarnessRun):
    SPEC = LoopSpec(name="mace", modifies="memory", family="harness", suites=("toolsim",),
                    paper="MACE: Co-Learning What to Remember and How to Hand Memory to Agents",
                    budget_counts="co-learning rounds (attempt, feedback, mining)", default_budget=6,
                    starts_from_champion=True)
    loop: Literal["mace"] = "mace"
    mace: MaceConfig = MaceConfig()


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


LOOP_CONFIGS: tuple[type[RunConfig], ...] = (
    EvolveRun, Aide2Run, SelfHealingRun, GrowingHarnessRun, MedRSIRun, DesignerRSIRun, GraphSkillEvoRun,
    GRPORun, PPOPACTRun, OPDRun, PairedRolloutsRun, HarnessBanditRun, HarnessOrModelRun,
    BetterTurnsRun, DataSenseRun, DreamRSIRun, EvoAllocRun, AlgoEvoRun, ResearchWorldModelsRun, TraceRun, CoverRun,
    CodeMidasRun,
    DenseRun,
    SkillLiftRun,
    RSIAnythingRun,
    MoscoptRun,
    RSIAgentRun,
    ArenaFlowRun,
    PriorOrFeedbackRun,
    GAIRun,
    MaceRun,
    ForgeRun,
    ModularRSIRun,
    MassRun,
    LimboRun,
    RPMemRun,
)
"""Every loop, in the order `ratchet loops` lists them."""

CONFIG_CLASSES: dict[str, type[RunConfig]] = {cls.SPEC.name: cls for cls in LOOP_CONFIGS}
LOOP_SPECS: dict[str, LoopSpec] = {name: cls.SPEC for name, cls in CONFIG_CLASSES.items()}

HARNESS_LOOPS = tuple(name for name, spec in LOOP_SPECS.items() if spec.family == "harness")
"""Loops whose candidates are toolsim harness edits: offline their `mutate` proposer is the
rule proposer (`tasks.proposers.rules`), which derives rules and skills from traces."""

STARTS_FROM_CHAMPION = tuple(name for name, spec in LOOP_SPECS.items() if spec.starts_from_champion)
"""Loops whose round 0 publishes one program or harness (`start_from="champion"` works)."""
BUDGET_CAPS = tuple(name for name, spec in LOOP_SPECS.items() if spec.budget_caps)
"""Loops that check `max_llm_tokens` / `max_evaluations` at their round boundaries."""


def loop_spec(name: str) -> LoopSpec:
    """The spec of loop ``name``; an unknown name is refused with the known ones."""
    return config_class(name).SPEC


def config_class(name: str | None) -> type[RunConfig]:
    """Loop ``name``'s config class; an unknown name is refused with the known ones."""
    if name not in CONFIG_CLASSES:
        raise ValueError(f"unknown loop {name!r}; loops: {', '.join(CONFIG_CLASSES)} (see `ratchet loops`)")
    return CONFIG_CLASSES[name]


def check_suite(loop: str, suite: str) -> None:
    """Refuse a loop/suite pair the loop cannot run, naming the suites that work."""
    loop_spec(loop).check_suite(suite)
