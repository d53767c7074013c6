"""Config and tables of the `algoevo` loop (AlgoEvo, issue 14): a design skill updated
only across tasks, a per-task experience tree of experience cards, and cross-task
promotion of operator-family patterns supported by at least 2 distinct tasks."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

ALGOEVO_TASKS = ("circle_packing", "bin_packing", "lasso")


class AlgoEvoConfig(Config):
    """Parameters of `algoevo`: the tasks are searched in `tasks` order, each with the
    skill as it stood when the task began; the last task is held out (searched with the
    promoted skill, never a source of patterns). `--budget` is evaluations per task."""

    tasks: tuple[str, ...] = ("circle_packing", "lasso", "bin_packing")
    """Task order; the last is the held-out task. A task named again is a later round of
    it (its tree starts afresh; from the previous round's best code when `inherit_code`)."""
    inherit_code: bool = False
    """A later round of a task starts from its previous round's best program (the paper's
    confound); off by default: every task starts from its suite's seed program."""
    ucb_c: float = Field(1.0, ge=0.0, le=10.0)
    """UCB exploration constant of node selection."""
    min_tasks: int = Field(2, ge=1, le=16)
    """Distinct tasks with a positive mean Δ a pattern needs to be promoted (the paper: 2)."""
    min_cards: int = Field(2, ge=1, le=1000)
    """Valid cards of a family a task needs before it counts as evidence for or against it."""
    delta: Literal["centred", "raw"] = "centred"
    """raw: a family's effect on a task is its cards' mean Δ (child − parent select score);
    centred: minus the mean Δ of all the task's valid cards (better than the average edit)."""
    boost: float = Field(3.0, ge=1.0, le=100.0)
    """Prior weight of a promoted operator family in the skill (others: 1)."""
    skill: Literal["promoted", "initial"] = "promoted"
    """initial: an ablation that never loads the promoted skill (every task searches with the
    initial skill; patterns are still gated and recorded)."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """The proposer's AST edits per child (the `mutate` proposer)."""

    @model_validator(mode="after")
    def _tasks(self) -> "AlgoEvoConfig":
        unknown = [t for t in self.tasks if t not in ALGOEVO_TASKS]
        if not self.tasks or unknown:
            raise ValueError(f"algoevo.tasks must name tasks among {', '.join(ALGOEVO_TASKS)}; "
                             f"got {list(self.tasks)}")
        return self


class AECardRow(Row):
    """An experience card: one real evaluation's modification, conditions, rationale and
    effect, attached by lineage (node, parent). Written by algoevo's search stage after
    every evaluation (append); read by its gate and analysts. Key: (run_id, id)."""

    run_id: str
    id: str
    task_id: str
    position: int
    """The task's position in `algoevo.tasks`."""
    round: int
    """The task's round (how many times the task came before in the order)."""
    node: str
    """The evaluated child's candidate id."""
    parent: str
    family: str
    modification: str
    """JSON: the operator family and its edits (params)."""
    conditions: str
    """JSON: the parent's depth, visits and UCB value, the family's prior weight, the
    child's validity, the skill version."""
    rationale: str
    before: float
    after: float
    delta: Optional[float]
    """after − before; null for a failed child."""
    eval_idx: int
    """Evaluation index within the task (the root is 0)."""


class AENodeRow(Row):
    """A node of a task's experience tree with its final statistics. Written by algoevo's
    search stage at the end of the task (append). Key: (run_id, task_id, round, id)."""

    run_id: str
    id: str
    task_id: str
    round: int
    parent: Optional[str]
    score: float
    valid: bool
    visits: int
    best: Optional[float]
    """Best valid select score in the node's subtree (null when none is valid)."""
    depth: int


class AEPatternRow(Row):
    """A design pattern (an operator family) as one gate saw it after a source task:
    its supporting tasks and whether it is promoted into the skill. Written by algoevo's
    gate (append). Key: (run_id, after_task, id)."""

    run_id: str
    id: str
    desc: str
    family: str
    after_task: int
    """Position in the task order of the task after which this gate ran."""
    support_task_ids: list[str]
    effects: str
    """JSON: task -> the family's mean Δ there."""
    promoted: bool
    skill_ver: str
    """The skill version the gate produced (the one the next task loads)."""


class AETaskRunRow(Row):
    """One task's search: the skill it loaded, its budget use and its best. Written by
    algoevo's register stage (append). Key: (run_id, position)."""

    run_id: str
    position: int
    task_id: str
    round: int
    skill_ver: str
    inherited_code: bool
    evals: int
    """Child evaluations (the root's evaluation not counted)."""
    tokens: int
    """LLM tokens (0: the `mutate` proposer calls no model)."""
    best: float
    root_score: float
    evals_to_best: int
    """Evaluations until the best was first reached (0: the root was never beaten)."""
    best_candidate: str
    heldout_metric: Optional[float]
    """The best program's mean on the task's holdout cases."""
    split: Literal["source", "heldout"]
