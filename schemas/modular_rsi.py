"""Config and tables of the `modular_rsi` loop (ModularRSI, issue 16): contrastive
success/failure analysis finds recurring defects, each of five harness modules evolves
separately from one base on a task pool kept apart from the benchmark, then an
integration step merges them. Imports nothing of ours but the row base."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from schemas.frozen import Config
from schemas.rows import Row


class ModularRSIConfig(Config):
    """Parameters of `modular_rsi` on toolsim. The run's `budget` is the number of
    evolution rounds (paper: not given)."""

    pool_templates: int = Field(4, ge=1, le=7)
    """Templates whose train instances form the evolution pool (the paper's 2,000-task
    pool); the others are held out: never rolled, never gated, only in `mrsi_evals`."""
    batch: int = Field(12, ge=2, le=1000)
    """Pool tasks rolled per round (paper: a subset of the pool, size not given)."""
    min_support: int = Field(2, ge=1, le=100)
    """Tasks a defect must recur in to become a finding."""
    mode: Literal["modular", "monolithic"] = "modular"
    """`monolithic`: the ablation (paper's non-modular evolution): edits to the whole
    harness in sequence, each from the previous one, no routing and no integration."""


class MRSIRolloutRow(Row):
    """One pool task's rollout under a round's base harness. ``task_id`` is the
    template (its batch instances are its rollouts, ``idx``); ``trace_ref`` the
    execution whose trajectory is in ``steps``; ``tokens`` its tool calls (toolsim's
    cost analog). Key: (run_id, round, case_id)."""

    run_id: str
    round: int
    task_id: str
    case_id: str
    harness_ver: str
    idx: int
    success: bool
    steps: int
    tokens: int
    trace_ref: str


class MRSITaskGroupRow(Row):
    """A task's outcome mix in a round and the defect its analysis found (event type,
    routed module, the failing step), None when nothing to fix. Key: (run_id, round, task_id)."""

    run_id: str
    round: int
    task_id: str
    n_succ: int
    n_fail: int
    mode: str
    event: Optional[str]
    module: Optional[str]
    step: Optional[int]


class MRSIFindingRow(Row):
    """A recurring defect routed to one module. ``id`` = sha256 of its content. Key: (run_id, id)."""

    run_id: str
    id: str
    round: int
    module: str
    event: str
    text: str
    support_task_ids: list[str]


class MRSIModuleEditRow(Row):
    """One module edit (from the round's base) and the gate's three checks, each with
    its reason. ``id`` = sha256 of (module, base, diff); ``candidate_id`` the edited
    harness program. Key: (run_id, id)."""

    run_id: str
    id: str
    round: int
    module: str
    base_ver: str
    diff: str
    operator: str
    edit_key: str
    """What the edit does (the proposer's key): a rejected key is not proposed again."""
    rationale: str
    candidate_id: str
    gate_static: bool
    gate_overfit: bool
    gate_run: Optional[bool]
    """None: not run, an earlier check failed."""
    static_reason: str
    overfit_reason: str
    run_reason: str
    accepted: bool


class MRSIIntegrationRow(Row):
    """The round's merged harness: the module versions it holds (module -> edit id, or
    "base") and the conflicts integration resolved. Key: (run_id, round)."""

    run_id: str
    round: int
    harness_ver: str
    candidate_id: str
    module_vers: str
    """JSON: module -> the accepted edit's id, or "base"."""
    conflicts: list[str]


class MRSIEvalRow(Row):
    """A harness on one benchmark task (holdout split, every template), for reporting:
    ``benchmark`` is "in_domain" (a pool template) or "held_out" (never in the pool).
    ``model`` is the frozen procedural agent. Key: (run_id, harness_ver, task_id)."""

    run_id: str
    harness_ver: str
    role: str
    """"seed" or "final"."""
    model: str
    benchmark: str
    task_id: str
    passed: bool
