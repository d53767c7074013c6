"""The harness loops' config classes (toolsim harness edits: rules, skills, memory): see
`schemas.loops`, which lists every loop."""

from __future__ import annotations

from typing import Literal

from schemas.admission import DesignerConfig, GrowConfig, HealConfig, MedRSIConfig
from schemas.configs import EvolveConfig, LoopSpec, RunConfig
from schemas.forge import ForgeConfig
from schemas.graphskillevo import GraphSkillEvoConfig
from schemas.limbo import LimboConfig
from schemas.mace import MaceConfig
from schemas.modular_rsi import ModularRSIConfig
from schemas.moscopt import MoscoptConfig
from schemas.rsiagent import RSIAgentConfig
from schemas.skilllift import SkillLiftConfig


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


class SkillLiftRun(_HarnessRun):
    SPEC = LoopSpec(name="skilllift", modifies="skills", family="harness", suites=("toolsim",),
                    paper="SkillLift: cheap skill edits first, then calibrate the scoring rubric with real execution",
                    budget_counts="outer rounds (an inner rubric-only search, then top-k real runs)",
                    default_budget=6, starts_from_champion=True)
    loop: Literal["skilllift"] = "skilllift"
    skilllift: SkillLiftConfig = SkillLiftConfig()


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


class MaceRun(_HarnessRun):
    SPEC = LoopSpec(name="mace", modifies="memory", family="harness", suites=("toolsim",),
                    paper="MACE: Co-Learning What to Remember and How to Hand Memory to Agents",
                    budget_counts="co-learning rounds (attempt, feedback, mining)", default_budget=6,
                    starts_from_champion=True)
    loop: Literal["mace"] = "mace"
    mace: MaceConfig = MaceConfig()
