"""What each loop is, in one place: its paper, what it modifies, which suites it runs on,
what `--budget` counts and its default budget. The CLI's `ratchet loops`, the suite
checks of `ratchet run` and every flow's ``SPEC`` read these specs; adding a loop adds
one entry here (and its flow in ``flows.LOOPS``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.frozen import Config

ArtifactKind = Literal["program", "rules", "skills", "prompt", "config", "weights", "scheduler"]
Family = Literal["search", "harness", "training"]
"""Loop families: program search (candidates are programs or agent configs), harness loops
(candidates are toolsim harness edits), training loops (candidates are checkpoints)."""


class LoopSpec(Config):
    """What a loop improves and which scorer anchors it. The anchor is fixed per run:
    a gate refuses evidence scored by any other scorer version, so a candidate can never
    change the ruler it is measured with."""

    name: str
    modifies: ArtifactKind
    """The artifact kind the loop's candidates are."""
    anchor: Literal["suite"] = "suite"
    """Which scorer anchors the loop: the suite's own trusted scorer."""
    paper: str
    """The method's source, as named in shared/loops/."""
    family: Family
    suites: tuple[str, ...]
    """The suites the loop can run on; the first is its default."""
    budget_counts: str
    """What one unit of `--budget` is, in words."""
    default_budget: int = Field(ge=1)

    @property
    def default_suite(self) -> str:
        return self.suites[0]


_PROGRAM_SUITES = ("circle_packing", "bin_packing", "spin")
_TRAINING = "optimizer steps"

LOOP_SPECS: dict[str, LoopSpec] = {spec.name: spec for spec in (
    LoopSpec(name="evolve", modifies="program", family="search", suites=_PROGRAM_SUITES,
             paper="AIDE² inner loop; FunSearch; OpenEvolve", budget_counts="child programs", default_budget=64),
    LoopSpec(name="aide2", modifies="config", family="search", suites=("circle_packing+bin_packing",),
             paper="AIDE²: recursive self-improvement of AI research agents",
             budget_counts="outer nodes (agents)", default_budget=4),
    LoopSpec(name="self_healing", modifies="rules", family="harness", suites=("toolsim",),
             paper="Self-Healing Harness: Runtime Oversight of Agent Self-Modification",
             budget_counts="heal rounds", default_budget=32),
    LoopSpec(name="growing_harness", modifies="rules", family="harness", suites=("toolsim",),
             paper="Grow the Harness, Not the Context: From Strategy-Free Scaffolds to Reusable Specialist Agents",
             budget_counts="repair steps", default_budget=32),
    LoopSpec(name="medrsi", modifies="rules", family="harness", suites=("toolsim",),
             paper="MedRSI: Recursive Self-Improvement for Medical Agents via Clinically Aligned Self-Evolution",
             budget_counts="discovery rounds", default_budget=32),
    LoopSpec(name="designer_rsi", modifies="skills", family="harness", suites=("toolsim",),
             paper="Designer-RSI: Evolving Procedural Memory from User Traffic for Agentic Graphic Design",
             budget_counts="traffic rounds", default_budget=32),
    LoopSpec(name="grpo", modifies="weights", family="training", suites=("arith",),
             paper="GRPO / Dr. GRPO / Phantom Advantages / GRPODropout", budget_counts=_TRAINING, default_budget=30),
    LoopSpec(name="ppo_pact", modifies="weights", family="training", suites=("arith",),
             paper="PACT: From Credit Assignment to Critic Alignment", budget_counts=_TRAINING, default_budget=30),
    LoopSpec(name="opd", modifies="weights", family="training", suites=("arith",),
             paper="OPD / DF-OPD / DIAL-OPD / Cal-OPD / Attract-Repel / GVPO++ / STRIDE / CLOOPD",
             budget_counts=_TRAINING, default_budget=30),
    LoopSpec(name="paired_rollouts", modifies="weights", family="training", suites=("arith",),
             paper="Luck Is Not Skill", budget_counts=_TRAINING, default_budget=30),
    LoopSpec(name="harness_bandit", modifies="weights", family="training", suites=("arith",),
             paper="HarnessBandit", budget_counts=_TRAINING, default_budget=30),
)}

HARNESS_LOOPS = tuple(name for name, spec in LOOP_SPECS.items() if spec.family == "harness")
"""Loops whose candidates are toolsim harness edits: offline their `mutate` proposer is the
rule proposer (`tasks.proposers.rules`), which derives rules and skills from traces."""

STARTS_FROM_CHAMPION = ("evolve",) + HARNESS_LOOPS
"""Loops whose round 0 publishes one program or harness, so a run can start from the
store's champion instead of the suite's seed (`start_from="champion"`)."""


def loop_spec(name: str) -> LoopSpec:
    """The spec of loop ``name``; an unknown name is refused with the known ones."""
    if name not in LOOP_SPECS:
        raise ValueError(f"unknown loop {name!r}; loops: {', '.join(LOOP_SPECS)} (see `ratchet loops`)")
    return LOOP_SPECS[name]


def check_suite(loop: str, suite: str) -> None:
    """Refuse a loop/suite pair the loop cannot run, naming the suites that work."""
    spec = loop_spec(loop)
    if suite not in spec.suites:
        raise ValueError(f"{loop} does not run on suite {suite!r}; it runs on: {', '.join(spec.suites)} "
                         f"(e.g. ratchet run {loop} --suite {spec.default_suite})")
