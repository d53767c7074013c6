"""Each loop in one place: its config class, which carries its spec (paper, what it
modifies, its suites, what `--budget` counts, its default budget) and only the parameter
sections the loop reads. `LOOP_CONFIGS` is the one list of loops: `LOOP_SPECS`,
`flows.LOOPS`, the CLI's `ratchet loops`, `--set` and the suite checks all derive from
it, so adding a loop adds its class here (and its flow module `flows.<loop>`). The classes
live in their family's module (`schemas.loops_search`, `loops_harness`, `loops_training`,
`loops_protocol`); import them from here."""

from __future__ import annotations

from schemas.configs import LoopSpec, RunConfig
from schemas.loops_harness import (
    DesignerRSIRun,
    ForgeRun,
    GraphSkillEvoRun,
    GrowingHarnessRun,
    LimboRun,
    MaceRun,
    MedRSIRun,
    ModularRSIRun,
    MoscoptRun,
    RSIAgentRun,
    SelfHealingRun,
    SkillLiftRun,
)
from schemas.loops_protocol import (
    BetterTurnsRun,
    DataSenseRun,
    DenseRun,
    GAIRun,
    HarnessOrModelRun,
    PriorOrFeedbackRun,
    TraceRun,
)
from schemas.loops_search import (
    Aide2Run,
    AlgoEvoRun,
    CodeMidasRun,
    DreamRSIRun,
    EvoAllocRun,
    EvolveRun,
    ResearchWorldModelsRun,
    RSIAnythingRun,
)
from schemas.loops_training import (
    ArenaFlowRun,
    CoverRun,
    GRPORun,
    HarnessBanditRun,
    MassRun,
    OPDRun,
    PairedRolloutsRun,
    PPOPACTRun,
    RPMemRun,
)

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
