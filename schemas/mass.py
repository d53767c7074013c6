"""Config and tables of the `mass` loop (MASS, issue 16): evolve a multi-role toolsim
workflow (a planner with a return-field contract, workers that each own a harness
rule), then behaviour-clone the winners into one small torch policy over request
features with the workflow removed. Imports nothing of ours but the row base."""

from __future__ import annotations

from pydantic import Field

from schemas.frozen import Config
from schemas.rows import Row


class MassConfig(Config):
    """Parameters of `mass` on toolsim. The run's `budget` is the number of inner
    generations. The paper leaves population size, mutation operators and repeats per
    workflow unspecified: the defaults below are ours."""

    children: int = Field(4, ge=1, le=64)
    """Mutated children per generation (the population besides the parent)."""
    max_roles: int = Field(4, ge=1, le=6)
    """Structural constraint: workers per workflow."""
    repeats: int = Field(2, ge=1, le=20)
    """Distillation: runs of each lineage workflow per train case (independent noise after the first)."""
    lineage: bool = True
    """False = the "single-workflow student" ablation: distil only the final workflow's runs."""
    epochs: int = Field(200, ge=1, le=5000)
    """Behaviour-cloning epochs (full batch)."""
    lr: float = Field(1.0, gt=0.0, le=10.0)
    """Gradient-descent step size of behaviour cloning."""


class MassWorkflowRow(Row):
    """One workflow proposed (or the seed). ``wf_id`` = sha256 of ``spec_json``. Key:
    (run_id, wf_id, gen)."""

    run_id: str
    gen: int
    wf_id: str
    parent_id: str | None
    operator: str
    spec_json: str
    author_model: str
    """'rules' (seeded mutation operators) or the LLM optimizer's model name."""


class MassExecutionRow(Row):
    """One case run under a workflow (``executor_model`` 'workflow') or a policy's
    choices (its candidate id). ``out_tokens``: tool calls (the cost analog, no LLM);
    ``delegation_calls``: steps the workers' rules caused. Key: (run_id, exec_id)."""

    run_id: str
    gen: int
    exec_id: str
    wf_id: str
    task_id: str
    split: str
    executor_model: str
    out_tokens: int
    delivered: bool
    success: bool
    delegation_calls: int


class MassPairwiseRow(Row):
    """One pairwise comparison of a child's and its parent's execution on a case (the
    judge: outcome checker, then fewer calls). Key: (run_id, exec_a, exec_b)."""

    run_id: str
    gen: int
    exec_a: str
    exec_b: str
    judge_model: str
    winner: str
    """'a', 'b' or 'tie'."""


class MassSFTExampleRow(Row):
    """One behaviour-cloning example kept by the filter: the pairwise-best successful
    run of a (case, repeat); ``dialogue_json`` = the request features and the rules the
    workers applied (the workflow spec removed). Key: (run_id, ex_id)."""

    run_id: str
    ex_id: str
    exec_id: str
    wf_id: str
    role: str
    dialogue_json: str


class MassEvalRow(Row):
    """A final evaluation: the evolved workflow, the distilled policy or the seed policy
    on a held-out or test case. Key: (run_id, model_gen, bench, task_id, trial)."""

    run_id: str
    model_gen: str
    bench: str
    task_id: str
    trial: int
    score: float
    out_tokens: int
    delivered: bool
    scorable: bool
