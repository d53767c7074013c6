"""Config and tables of the `graphskillevo` loop (GraphSkillEvo, issue 16): a population
of graph-structured skills (global principles + a step graph) evolved on toolsim by
failure-keyed mutation and subgraph crossover, with a validity check before any
offspring runs. Imports nothing of ours but the row base."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

Operator = Literal["mutate", "crossover"]


class GraphSkillEvoConfig(Config):
    """Parameters of `graphskillevo` on toolsim. The run's `budget` is the number of
    generations (paper: 5)."""

    population: int = Field(4, ge=1, le=32)
    """Skills kept after each generation: the top `population` of old ∪ new on the
    validation (select) split (paper: 4; 1 with `operators=[mutate]` is the SkillOpt-like
    single-candidate hill-climbing baseline)."""
    offspring: int = Field(4, ge=1, le=64)
    """Offspring proposed per generation (paper: not given; one per member by default)."""
    batch: int = Field(15, ge=1, le=1000)
    """Train tasks every member runs per generation (paper: 15)."""
    max_failures: int = Field(5, ge=1, le=100)
    """Failed trajectories kept per member as mutation feedback (paper: at most 5)."""
    operators: tuple[Operator, ...] = ("mutate", "crossover")
    """The frozen operator rotation: offspring slot i of generation g uses
    operators[(g + i) % len]; crossover falls back to mutate with one member."""

    @model_validator(mode="after")
    def _operators(self) -> "GraphSkillEvoConfig":
        if not self.operators:
            raise ValueError("graphskillevo.operators is empty; use [mutate] or [mutate, crossover]")
        return self


class GSESkillRow(Row):
    """One proposed skill (the seed, a mutation or a crossover child), valid or not.
    Written by graphskillevo's sample stage (the validity check at once); read by the gate
    and analysts. ``skill_id`` = sha256 of the skill's canonical JSON; ``candidate_id`` the
    compiled harness program it runs as (None when invalid: it never runs). Key: (run_id,
    skill_id)."""

    run_id: str
    skill_id: str
    gen: int
    parents: list[str]
    op: str
    principles_json: str
    graph_json: str
    valid: bool
    reason: Optional[str]
    """Why the skill is invalid (dangling edge, cycle, unreachable end, ...); None when valid."""
    candidate_id: Optional[str]
    rationale: str


class GSETrainRunRow(Row):
    """One member's run on one task of its generation's training batch. Written by the
    score stage; read by distill (failures) and analysts. ``execution_id`` names its
    trajectory in ``steps``. Key: (run_id, gen, skill_id, task_id)."""

    run_id: str
    gen: int
    skill_id: str
    task_id: str
    success: bool
    execution_id: str
    traj_uri: Optional[str]
    feedback: bool
    """Kept as one of the member's at most ``max_failures`` failure feedbacks."""


class GSEValScoreRow(Row):
    """A valid skill's success on the validation (select) split, measured once. Written
    by the gate; read by selection and analysts. Key: (run_id, skill_id)."""

    run_id: str
    skill_id: str
    gen: int
    val_success: float
    n_cases: int


class GSEPopulationRow(Row):
    """A member of the population after generation ``gen`` (gen 0: the seed), with its
    rank by validation success. Written by the gate. Key: (run_id, gen, skill_id)."""

    run_id: str
    gen: int
    skill_id: str
    rank: int
    val_success: float


class GSETestRow(Row):
    """A skill's run on one test task, for final reporting only (no decision reads it).
    ``tokens``: the tool calls the episode made (toolsim's cost analog; no LLM).
    Key: (run_id, skill_id, task_id)."""

    run_id: str
    skill_id: str
    bench: str
    task_id: str
    success: bool
    tokens: int
    role: str
    """"champion" (best on validation after the last generation) or "seed"."""
