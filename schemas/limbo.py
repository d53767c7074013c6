"""Config and tables of the `limbo` loop (LIMBO, issue 17): on a stream of toolsim
requests with injected failures, an online per-task controller picks the memory-replay
mode and the inference budget (an arm), trading success against simulated tokens.
Imports nothing of ours but the row base."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

MODES = ("none", "direct", "compressed", "retrieval")
"""Memory modes: no memory; replay of the last successful plan (its whole harness and
trajectory); its compressed tool-call skeleton (rules only); retrieval of the entries
most similar to the request's template."""
BUDGETS = {"lean": (64, 1, 12), "full": (256, 3, 40)}
"""Budget name -> (gen_len: simulated tokens one repair turn generates, turns: attempts
per request, tool_calls: the step cap of one attempt)."""


class LimboConfig(Config):
    """Parameters of `limbo` on toolsim. `--budget` counts stream requests (the paper's
    500). Paper: arm budget values, memory capacity and bonus form not given."""

    block: int = Field(50, ge=1, le=500)
    """Requests per stage call (one part per block; the controller updates after every request)."""
    fault_rates: tuple[float, ...] = (0.0, 0.15, 0.3, 0.5)
    """Injected fault rate of a request, cycled by a seeded draw per request."""
    capacity: int = Field(16, ge=1, le=256)
    """Memory capacity (successful trajectories); the oldest is evicted first (FIFO)."""
    retrieve_k: int = Field(2, ge=1, le=8)
    """Entries retrieval mode loads (most similar template first, then most recent)."""
    alpha: float = Field(0.3, ge=0.0, le=10.0)
    """LinUCB exploration bonus weight: alpha * sqrt(x' A^-1 x)."""
    cost_weight: float = Field(0.25, ge=0.0, le=100.0)
    """Selection criterion: p_success + bonus - cost_weight * predicted cost (per 1k tokens)."""
    ridge: float = Field(1.0, gt=0.0, le=100.0)
    """Ridge prior of both heads (A starts at ridge * I)."""
    window: int = Field(20, ge=1, le=500)
    """Recent-success and recent-cost features: mean over the last `window` requests."""
    fixed_arms: tuple[str, ...] = ("none-full", "direct-full", "compressed-full", "retrieval-full",
                                   "none-lean", "retrieval-lean")
    """Fixed-arm baselines run on the same stream (the frontier's comparison points)."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the summary's paired CIs."""

    @model_validator(mode="after")
    def _check(self) -> "LimboConfig":
        known = {f"{m}-{b}" for m in MODES for b in BUDGETS}
        bad = sorted(set(self.fixed_arms) - known)
        if bad:
            raise ValueError(f"limbo.fixed_arms {list(self.fixed_arms)}: unknown {bad}; known: {', '.join(sorted(known))}")
        if not self.fault_rates or any(not 0.0 <= r <= 1.0 for r in self.fault_rates):
            raise ValueError(f"limbo.fault_rates {list(self.fault_rates)}: need rates in [0, 1]")
        return self


class LimboArmRow(Row):
    """One arm (the spec's ``arms``): a memory mode x a budget. Written once per run by
    the sample stage. Key: (run_id, id)."""

    run_id: str
    id: str
    mode: str
    gen_len: int
    turns: int
    tool_calls: int


class LimboStreamRow(Row):
    """One request of the stream under one policy (the spec's ``stream``): ``policy`` is
    "controller" or "fixed:<arm>". ``features`` the JSON the controller read before
    choosing; ``p_pred``/``cost_pred``/``bonus`` its heads' predictions for the chosen
    arm (None for a fixed policy); ``tokens`` simulated tokens (context + steps + repair
    generations); ``cost`` = tokens / 1000 (a uniform price proxy). ``execution_id``
    names the request's steps (controller only). Key: (run_id, policy, t)."""

    run_id: str
    policy: str
    seed: int
    model: str
    env: str
    t: int
    task_id: str
    fault_rate: float
    features: str
    arm: str
    p_pred: Optional[float]
    cost_pred: Optional[float]
    bonus: Optional[float]
    success: bool
    turns_used: int
    tokens: int
    cost: float
    mem_ver: str
    """The memory version (content id) after this request's gate."""
    execution_id: str


class LimboMemoryRow(Row):
    """One memory entry (the spec's ``memory``): a successful trajectory admitted at
    ``t_added`` under ``policy``, evicted at ``evicted_t`` (None while held).
    ``traj_ref`` is the execution id of the run that succeeded. Written by the register
    stage once the policy's stream ends. Key: (run_id, policy, entry)."""

    run_id: str
    policy: str
    entry: str
    template: str
    t_added: int
    traj_ref: str
    evicted_t: Optional[int]
