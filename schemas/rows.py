"""One pydantic row model per table (DESIGN.md, "Data model").

All tables are append-only. Mutable state (a run's status, a registry stage) is an
event row; the current state is the latest event. Every row carries ``run_id``
(``cases`` too, so a run's case set is self-contained). Ids are content hashes where
the thing has content (candidates, blobs, cases) and derived hashes otherwise, so a
retried stage reproduces the same ids. Timestamps are UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

Split = Literal["train", "select", "holdout", "protected", "test"]
ExecutionStatus = Literal["ok", "error", "timeout", "memory", "killed", "invalid"]
Decision = Literal["accept", "reject", "trial", "rollback"]
RegistryStage = Literal["experimental", "stable", "retired"]
RunStatus = Literal["running", "finished", "failed", "damaged", "budget_exhausted"]


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunRow(Row):
    """A loop run's status event. Written by flows at start, end and failure; read by
    `ratchet runs/show/resume`. A resume adds another `running` event.
    Key: (run_id, status, event_at); the latest ``event_at`` wins."""

    run_id: str
    loop: str
    suite: str
    config_json: str
    status: RunStatus
    event_at: datetime
    started_at: datetime
    finished_at: Optional[datetime]
    parent_run_id: Optional[str]
    prefect_flow_run_id: Optional[str]
    mlflow_run_id: Optional[str]
    code_version: str
    error: Optional[str]
    start_candidate_id: Optional[str] = None
    """The candidate round 0 started from when it is an earlier run's champion."""
    start_run_id: Optional[str] = None
    """The run that registered that champion (None: the run started from the seed)."""


class CandidateRow(Row):
    """A proposed artifact version. Written by the sample stage; read by execute,
    the archive (parent selection) and analysts. Key: (run_id, candidate_id), where
    candidate_id is the sha256 of the artifact content."""

    run_id: str
    candidate_id: str
    round: int
    parent_ids: list[str]
    operator: str
    proposer: str
    artifact_kind: str
    artifact_uri: str
    island: int
    summary: str
    tokens_in: Optional[int] = None
    """Prompt tokens of the LLM call that wrote the candidate, as the endpoint's ``usage``
    reported them; None for a candidate no model wrote (and in parts written before
    these columns existed)."""
    tokens_out: Optional[int] = None
    """Completion tokens of that call."""
    latency_s: Optional[float] = None
    """Wall seconds of that call; set on every LLM-written candidate (a call that timed out
    too), so ``count(latency_s)`` counts the run's LLM calls."""


class CaseRow(Row):
    """An evaluation case of a suite. Written once per run by the flow's set-up stage;
    read by execute and score. Key: (run_id, suite, case_id)."""

    run_id: str
    suite: str
    case_id: str
    split: Split
    payload_json: str


class ExecutionRow(Row):
    """One attempt of one candidate on one case. Written by execute; read by score,
    distill and analysts. Key: execution_id = hash(run_id, candidate_id, case_id,
    seed, attempt). A crash, timeout or cheat is a status, never an exception."""

    run_id: str
    execution_id: str
    candidate_id: str
    case_id: str
    split: Split
    seed: int
    noise_key: Optional[str]
    attempt: int
    status: ExecutionStatus
    error: Optional[str]
    wall_s: float
    cpu_s: Optional[float]
    peak_rss_mb: Optional[float]
    tokens_in: Optional[int]
    tokens_out: Optional[int]
    cost_usd: Optional[float]
    output_uri: Optional[str]
    trajectory_uri: Optional[str]


class ScoreRow(Row):
    """A metric value of an execution. Written by score; read by gate, archive and
    analysts. ``scorer_version`` is the hash of the scorer's source: a gate refuses
    rows scored by any scorer other than the run's anchored one.
    Key: (run_id, execution_id, metric)."""

    run_id: str
    execution_id: str
    candidate_id: str
    case_id: str
    split: Split
    scorer: str
    scorer_version: str
    metric: str
    value: float
    valid: bool
    reason: Optional[str]


class StepRow(Row):
    """One step of a trajectory (agent turn, tool call, generated token span).
    Written by execute for agentic suites; read by distill. Key: (run_id, execution_id, step)."""

    run_id: str
    execution_id: str
    step: int
    kind: str
    name: str
    args_json: Optional[str]
    result_json: Optional[str]
    ok: Optional[bool]
    reward: Optional[float]
    logprob: Optional[float]
    teacher_logprob: Optional[float]


class DistillateRow(Row):
    """A memory, skill, rule, failure mode, experience card or training example that a
    round distilled. Written by distill; read by the next round's proposer. A status
    change (a rule proposed, then active or retired) is a new event row.
    Key: (run_id, distillate_id, round, status)."""

    run_id: str
    distillate_id: str
    round: int
    kind: str
    content: str
    uri: Optional[str]
    source_execution_ids: list[str]
    support: int
    status: str


class GateDecisionRow(Row):
    """An admission decision with its evidence. Written by gate (inside the gate +
    register transaction); read by register and analysts.
    ``select_score`` is the candidate's mean on the select split; held-out scores never
    appear here. Key: (run_id, decision_id), decision_id = hash(run_id, candidate_id, gate)."""

    run_id: str
    decision_id: str
    round: int
    candidate_id: str
    gate: str
    baseline_id: Optional[str]
    decision: Decision
    reason: str
    improved_cases: list[str]
    regressed_cases: list[str]
    select_score: Optional[float]
    baseline_score: Optional[float]
    delta: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    n_cases: int
    scorer_version: str
    evidence_json: str


class RegistryRow(Row):
    """A registry event: a candidate entering a stage under a name/alias.
    Written by register; read by `ratchet show` and later runs. The current holder of an
    alias is the latest event. ``holdout_score`` is measured only here, for registered
    champions, and is never used for selection. Key: (run_id, name, version)."""

    run_id: str
    name: str
    version: int
    candidate_id: str
    stage: RegistryStage
    alias: Optional[str]
    decision_id: str
    select_score: Optional[float]
    holdout_score: Optional[float]
    event_at: datetime


class TrainStepRow(Row):
    """An optimizer step of a training loop. Written by the training chunks of the
    post-training loops; read by reports. ``worker`` is the Dask worker that trained the
    chunk (``local``: the flow's own process), ``device`` the torch device (``cpu``,
    ``cuda:0``). Key: (run_id, candidate_id, step)."""

    run_id: str
    candidate_id: str
    step: int
    loss: float
    metrics: dict[str, float]
    tokens: int
    samples: int
    wall_s: float
    worker: Optional[str] = None
    """None in parts written before placement was recorded."""
    device: Optional[str] = None


class NodeRow(Row):
    """A node of AIDE²'s outer search tree: one candidate research agent.
    Written by the aide2 flow's gate; read by analysts. ``composite`` is the mean of
    hidden held-out scores over the selection suites. Key: (run_id, node_id)."""

    run_id: str
    node_id: str
    parent_id: Optional[str]
    round: int
    diff: str
    accepted: bool
    composite: float
    """Mean over selection suites of the champion's normalised holdout score (hidden)."""
    public_composite: float
    """The same mean over the select scores the inner agent itself saw (public)."""
    best_so_far: float
    child_run_ids: list[str]


class DecisionRow(Row):
    """One gold-history decision of a checkpoint (Better Turns' L1–L3): at turn ``turn``
    of conversation ``conv_id`` the model, given the reference history, predicted
    ``pred`` where the reference did ``ref`` (both rendered as one line). ``kind`` is
    "text" (a customer-facing text turn) or "tool". Written by better_turns' score
    stage; read by its verdict and analysts. Key: (run_id, candidate_id, conv_id, turn)."""

    run_id: str
    candidate_id: str
    model: str
    ckpt: str
    conv_id: str
    turn: int
    kind: Literal["text", "tool"]
    ref: str
    pred: str
    sim: float
    """L1: token F1 of the predicted turn against the reference turn, in [0, 1]."""
    judge_ok: bool
    """L2: the rule-based judge finds the turn reasonable."""
    tool_exact: bool
    """L3: the same action name and exactly the same arguments."""


class ClosedLoopRow(Row):
    """One closed-loop conversation of a checkpoint (Better Turns' L4–L5): the model ran
    on its own history against the case's backend. ``completed``: it reached its end
    with exactly the reference's calls; the three judge verdicts make up holistic
    success. ``execution_id`` names its trajectory in ``steps``. Written by
    better_turns' score stage. Key: (run_id, candidate_id, conv_id)."""

    run_id: str
    candidate_id: str
    model: str
    ckpt: str
    conv_id: str
    execution_id: str
    completed: bool
    retries: int
    """Tool errors the model was handed back (the run ends past the retry limit)."""
    status: str
    """How the run ended: "stopped" (the model ended it), "retry_limit" or "step_limit"."""
    goal_ok: bool
    policy_ok: bool
    tool_use_ok: bool


class AttemptRow(Row):
    """One attempt of DENSE's REFIT protocol: the initial attempt of a task under the
    starter harness (``phase`` "initial", ``feedback_method`` "initial", ``fb_id`` None) or
    its retry with one method's feedback (``fb_id`` the document's content id, a
    ``candidates`` row). ``passed`` is strict pass (every hidden goal and guard holds);
    ``tokens`` the feedback the retry read, ``tool_calls`` the attempt's calls;
    ``execution_id`` names its trajectory in ``steps``. Written by dense's execute stages;
    read by its gate, the findings and analysts. Key: (run_id, task_id, repeat, phase,
    feedback_method)."""

    run_id: str
    task_id: str
    split: str
    template: str
    receiver: str
    repeat: int
    phase: Literal["initial", "retry"]
    feedback_method: str
    fb_id: Optional[str]
    execution_id: str
    passed: bool
    progress: float
    tokens: int
    tool_calls: int
    steps: int


class TreeNodeRow(Row):
    """One node of a DENSE feedback tree: the root (the request) or a subgoal (a plan
    step), its status (completed / open / unreached), the trajectory steps that are its
    evidence and a one-line summary (entries, failures, the shortcut). Written by dense's
    distill stage; read by analysts. Key: (run_id, fb_id, node_id)."""

    run_id: str
    fb_id: str
    task_id: str
    repeat: int
    feedback_method: str
    node_id: str
    parent: Optional[str]
    subgoal: str
    status: str
    evidence_step_ids: list[int]
    summary: str


class IssueRow(Row):
    """One issue of a DENSE feedback tree: a failed postcondition at trajectory step
    ``step`` of node ``node_id``, closed only with ``closing_evidence`` (the later
    successful step of the same subgoal; any later success in the ``tree_nsr`` ablation).
    Root rows re-list what the children left open. Written by dense's distill stage.
    Key: (run_id, fb_id, node_id, step)."""

    run_id: str
    fb_id: str
    task_id: str
    node_id: str
    step: int
    issue: str
    message: str
    closed: bool
    closing_evidence: Optional[int]
