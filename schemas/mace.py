"""Config and tables of the `mace` loop (MACE, issue 17): co-learn what to remember
(MemGoG units mined from past logs) and how to hand memory to each role (intake ->
lookup -> action -> verify) on toolsim. Imports nothing of ours but the row base."""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

MACE_SELECTORS = ("joint", "factorised")
MACE_ARMS = ("memory", "no_feedback", "no_memory")


class MaceConfig(Config):
    """Parameters of `mace` on toolsim. `--budget` counts co-learning rounds: each attempts
    `batch` train requests under the current memory, updates it from their results and
    mines new units from their logs. Paper: budget, smoothing constant and risk rule are
    not specified (the defaults here)."""

    batch: int = Field(16, ge=1, le=1024)
    """Train requests per round (drawn without replacement per round, seeded)."""
    selector: str = "joint"
    """`joint`: a Thompson bandit over (unit set, form) pairs; `factorised`: one over sets and one over forms."""
    inject_budget: int = Field(2, ge=1, le=6)
    """Injection budget: units handed to one role at most."""
    max_sets: int = Field(4, ge=1, le=32)
    """Candidate unit sets per role (best by utility plus support), besides the empty set."""
    smoothing: float = Field(0.3, gt=0.0, le=1.0)
    """Smoothing constant of the utility and relation updates: u <- (1 - s) u + s y."""
    risk_floor: float = Field(0.2, ge=0.0, le=1.0)
    """Risk rule: a unit observed `min_obs` times with utility below this is not injected."""
    min_obs: int = Field(4, ge=1, le=1000)
    """Observations before the risk rule applies."""
    conflict_margin: float = Field(0.3, ge=0.0, le=1.0)
    """A pair is conflicting when its conflict weight exceeds its support weight by more than this."""
    max_units: int = Field(64, ge=1, le=512)
    """MemGoG size cap."""
    arms: tuple[str, ...] = MACE_ARMS
    """Test-split arms measured at the end under greedy selection: the frozen memory, the
    starting memory with the feedback update off, and no memory (the seed harness)."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the gate's paired CI."""

    @model_validator(mode="after")
    def _check(self) -> "MaceConfig":
        if self.selector not in MACE_SELECTORS:
            raise ValueError(f"mace.selector {self.selector!r}: known: {', '.join(MACE_SELECTORS)}")
        bad = sorted(set(self.arms) - set(MACE_ARMS))
        if bad or "memory" not in self.arms:
            raise ValueError(f"mace.arms {list(self.arms)}: unknown {bad}; known: {', '.join(MACE_ARMS)}; "
                             "must include 'memory'")
        return self


class MaceUnitRow(Row):
    """One unit of one memory version (the spec's ``units``). Written by distill (sample for
    the starting memory); read by analysts. ``ver`` is the version's candidate id;
    ``condition`` the trigger JSON, ``action`` the harness item JSON, ``output`` the
    consequence the miner stated. Key: (run_id, ver, unit_id)."""

    run_id: str
    ver: str
    unit_id: str
    role: str
    condition: str
    action: str
    output: str
    templates: list[str]
    utility: float
    n_obs: int


class MaceRelationRow(Row):
    """One support or conflict relation of one memory version (the spec's ``relations``).
    Written by distill; read by analysts. Key: (run_id, ver, src, dst, type)."""

    run_id: str
    ver: str
    src: str
    dst: str
    type: str
    weight: float


class MaceInjectionRow(Row):
    """What one role of one request was handed (the spec's ``injections``): its stage (the
    role's index in intake -> lookup -> action -> verify), its information need (the
    template), the unit set, the form and the budget. ``episode_id`` is the spec's run id.
    Written by sample; read by distill and analysts. Key: (run_id, episode_id, agent_role)."""

    run_id: str
    episode_id: str
    round: int
    task_id: str
    agent_role: str
    stage: int
    need: str
    unit_ids: list[str]
    form: str
    budget: int
    selector: str
    mem_ver: str


class MaceOutputRow(Row):
    """One role's output in one request (the spec's ``outputs``): a blob of its steps (name,
    ok, result, the rule or skill behind it). Written by execute. Key: (run_id, episode_id,
    agent_role)."""

    run_id: str
    episode_id: str
    agent_role: str
    output_uri: str
    n_steps: int


class MaceRunRow(Row):
    """One request's result (the spec's ``runs``): ``phase`` "train" (a round's attempt),
    "select" (a gate evaluation, ``arm`` candidate or baseline) or "test" (an end arm).
    Written by score, gate and test. Key: (run_id, episode_id)."""

    run_id: str
    episode_id: str
    round: int
    phase: str
    arm: str
    bench: str
    task_id: str
    mem_ver: str
    result: float
