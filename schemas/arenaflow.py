"""Config and tables of the `arenaflow` loop (ArenaFlow, issue 16): one knockout
comparison both trains a torch softmax policy over toolsim rule decisions (skills add
logit priors) and curates a skill library from the winners' key steps. Imports nothing
of ours but the row base."""

from __future__ import annotations

from pydantic import Field

from schemas.frozen import Config
from schemas.rows import Row


class ArenaFlowConfig(Config):
    """Parameters of `arenaflow` on toolsim. The run's `budget` is the number of rounds
    (one policy update each). The paper leaves group size, skills retrieved, the utility
    formula and the pruning count unspecified: the defaults below are ours."""

    group_size: int = Field(8, ge=2, le=64)
    """Trajectories the policy samples per request (one knockout bracket)."""
    batch: int = Field(16, ge=1, le=1000)
    """Train requests per round."""
    top_k: int = Field(2, ge=0, le=16)
    """Skills selected by utility after recall (the paper: too many hurt)."""
    prior_strength: float = Field(2.0, ge=0.0, le=20.0)
    """Logit a selected skill adds to its option's on-decision."""
    beta: float = Field(1.0, ge=0.0, le=10.0)
    """Key-step credit per unit of survival depth / rounds; 0 = the "no step attribution" ablation."""
    min_obs: int = Field(4, ge=1, le=1000)
    """Observations before a still-negative skill is pruned (the paper: not specified)."""
    lr: float = Field(0.3, gt=0.0, le=10.0)
    """Adam step size of the per-round policy update (a fresh Adam each round)."""
    utility_update: bool = True
    """False = the "no utility update" ablation: utilities stay 0, nothing is pruned."""
    library: bool = True
    """False = the "no library" ablation: no skills are recalled or written."""


class AFTrajectoryRow(Row):
    """One sampled trajectory (a request run under the harness its decisions build).
    Written by arenaflow's round stage; read by analysts and the report. ``tokens``: the
    tool calls it made (toolsim's cost analog, no LLM). Key: (run_id, traj_id)."""

    run_id: str
    round: int
    traj_id: str
    req_id: str
    step_ct: int
    tokens: int
    success: bool
    score: int
    """Tournament score: the bracket round it lost in (champion: rounds + 1)."""
    advantage: float
    choices_json: str
    """The decision per menu option, as {option_id: 0/1}."""


class AFMatchRow(Row):
    """One comparison of the knockout. Key: (run_id, match_id)."""

    run_id: str
    round: int
    req_id: str
    match_id: str
    a: str
    b: str
    winner: str
    bracket_round: int
    key_steps_json: str
    """{step_idx: [options used up to it]} of the winner's key steps."""
    judged_by: str = "rule"
    """``rule``, ``llm``, or ``rule (llm answer unusable: why)``: who decided the match."""


class AFKeyStepRow(Row):
    """A key step of a trajectory: a state change its opponent lacked, with how many won
    matches confirm it. Key: (run_id, traj_id, step_idx)."""

    run_id: str
    round: int
    traj_id: str
    step_idx: int
    survival_depth: int


class AFSkillUsageRow(Row):
    """A retrieved skill in one trajectory: whether its rule fired (used) and whether
    it fired up to a key step (credited). Key: (run_id, traj_id, skill_id)."""

    run_id: str
    round: int
    traj_id: str
    skill_id: str
    used: bool
    credited: bool


class AFSkillRow(Row):
    """A skill's state after a round (an event row: the latest round wins). Written by
    the gate stage for every skill written, updated or pruned in the round. ``skill_id``
    = sha256 of its (template, option). Key: (run_id, skill_id, round)."""

    run_id: str
    round: int
    skill_id: str
    ver: int
    template: str
    option: str
    text: str
    utility: float
    n_obs: int
    active: bool
