"""Config and tables of the `rsiagent` loop (RSIAgent, issue 17): practise in the toolsim
environment first (a curriculum over cells of template x parameters x failure event,
breadth then depth), build an environment memory from verified recoveries, freeze it,
then run the target tasks with it. Imports nothing of ours but the row base."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

EVENTS = {"calm": 0.0, "faulty": 0.3, "stormy": 0.6}
"""Failure events of a cell: the fault rate its practice tasks run under."""


class RSIAgentConfig(Config):
    """Parameters of `rsiagent` on toolsim. `--budget` counts practice rounds; the first
    `breadth_rounds` are breadth (stratified over templates on `workers` workers), the
    rest depth (a bandit on the cells with the lowest verified success or a new failure
    signature). Paper: tasks per round, rounds, the switch and memory size not given."""

    tasks_per_round: int = Field(8, ge=1, le=256)
    """Practice tasks planned per round."""
    breadth_rounds: int = Field(2, ge=0, le=64)
    """Rounds of the breadth phase before the depth phase starts."""
    params_per_template: int = Field(4, ge=1, le=16)
    """Train instances per template that are cells' parameters (never select/test ones)."""
    events: tuple[str, ...] = ("calm", "faulty", "stormy")
    """Failure events (keys of `EVENTS`): a cell is (template, parameter, event)."""
    max_entries: int = Field(48, ge=1, le=64)
    """Memory size cap (a harness holds at most 64 rules)."""
    novelty_bonus: float = Field(1.0, ge=0.0, le=10.0)
    """Depth bandit: bonus of a cell whose last run showed a failure signature never seen before."""
    explore: float = Field(0.5, ge=0.0, le=10.0)
    """Depth bandit: weight of the UCB exploration term."""
    arms: tuple[str, ...] = ("frozen", "none", "breadth")
    """Test-time memories on the target split: the frozen memory, no memory, and the memory
    admitted by the end of the breadth phase."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the gate's paired CI."""

    @model_validator(mode="after")
    def _check(self) -> "RSIAgentConfig":
        unknown = sorted(set(self.events) - set(EVENTS))
        if unknown or not self.events:
            raise ValueError(f"rsiagent.events {list(self.events)}: unknown {unknown}; known: {', '.join(EVENTS)}")
        bad = sorted(set(self.arms) - {"frozen", "none", "breadth"})
        if bad or "frozen" not in self.arms:
            raise ValueError(f"rsiagent.arms {list(self.arms)}: unknown {bad}; must include 'frozen'")
        return self


class RSAPracticeRow(Row):
    """One planned practice task (the spec's ``practice``). Written by the sample stage;
    read by execute and analysts (which templates practice saw). ``spec`` is the JSON of
    its cell, source train case, worker and noise seed. Key: (run_id, task_id)."""

    run_id: str
    task_id: str
    round: int
    phase: str
    """"breadth" or "depth"."""
    template: str
    cell: str
    """"template|parameter|event"."""
    source_case: str
    """The train case the task is built from (practice never reads another split)."""
    worker: int
    spec: str


class RSARunRow(Row):
    """One execution of a practice task (the spec's ``runs``): the attempt under the
    current memory (``role`` "attempt") or the verification of a recovery the memory writer
    proposed (``role`` "recovery"). Written by execute and distill; read by sample (depth
    bandit), distill and analysts. ``code`` is the JSON of the harness the executor ran;
    ``artifact_ref`` the execution id of its steps. Key: (run_id, id)."""

    run_id: str
    id: str
    task_id: str
    round: int
    role: str
    mem_ver: str
    code: str
    artifact_ref: str
    verdict: bool
    """The independent verifier's verdict: the backend's end state meets the expected state."""
    failure_cause: Optional[str]
    """The failure signature (``tool:code``, ``unmet:<goal>``, ``broken:<guard>``); None on success."""
    progress: float


class RSAMemoryRow(Row):
    """One entry of one memory version (the spec's ``memory``): (tool, event, state
    predicate) -> (cause, remedial action). Written by distill; read by gate and analysts.
    ``ver`` is the memory version's candidate id. Key: (run_id, ver, entry_id)."""

    run_id: str
    entry_id: str
    ver: str
    condition: str
    action_script: str
    consequence: str
    source_runs: list[str]


class RSATestRunRow(Row):
    """One target task under one frozen memory snapshot (the spec's ``test_runs``): no
    curriculum and no memory update. Written by the test stage after the freeze. Partial
    (progress) and binary (success) are kept separate. Key: (run_id, task_id, arm)."""

    run_id: str
    task_id: str
    arm: str
    mem_snapshot: str
    partial: float
    binary: bool
    grader_ver: str
