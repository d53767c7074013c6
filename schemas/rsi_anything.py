"""Config and tables of the `rsi_anything` loop (RSI-Anything, issue 14): a proposer
policy and its outcome predictor (world model, WM) change together, and the pair is
kept only when it beats the old pair."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from schemas.frozen import Config
from schemas.rows import Row


class RSIAnythingConfig(Config):
    """Parameters of `rsi_anything` on bin_packing: each round the policy (a bandit over
    `mutate`'s operators) proposes `candidates_per_round` children of the incumbent, the
    WM (ridge on code features) predicts each one's public-score gain, and only its top
    pick is executed on the public (select) cases."""

    gate: Literal["pair", "parts"] = "pair"
    """pair: the assembled (policy, WM) must beat the old pair (the paper's compatibility
    gate); parts: each part that passes its own check is kept, no pair comparison (ablation)."""
    wm: Literal["adaptive", "fixed", "none"] = "adaptive"
    """adaptive: refit when the reliability check flags it; fixed: the warm-up fit kept
    throughout; none: no predictor (the first proposal is executed; the paper's static
    verifier is not built here)."""
    candidates_per_round: int = Field(4, ge=1, le=64)
    """Children proposed per round (the paper: 4)."""
    warmup: int = Field(8, ge=0, le=256)
    """Children of the seed program executed before round 1: the WM's first training pairs."""
    val_batches: int = Field(2, ge=1, le=32)
    """Validation draws per policy at a gate (the same seeds for the old and new policy)."""
    val_children: int = Field(4, ge=2, le=64)
    """Children per validation draw, all executed on the public cases."""
    min_pairs: int = Field(4, ge=1, le=1000)
    """Same-version (prediction, actual) pairs the reliability check needs (the paper's N)."""
    max_calib_error: float = Field(0.3, gt=0.0, le=100.0)
    """Mean |predicted − actual| gain above which a WM with enough pairs is unreliable."""
    min_coverage: float = Field(0.5, ge=0.0, le=1.0)
    """Share of the round's candidates whose operator the WM was trained on, below which
    the check says "insufficient evidence"."""
    ridge_lambda: float = Field(1.0, gt=0.0, le=1e6)
    policy_lr: float = Field(2.0, gt=0.0, le=100.0)
    """Step of the exponential-weights update of the operator distribution."""
    policy_floor: float = Field(0.05, ge=0.0, le=0.2)
    """Least probability of an operator after an update."""
    gain_clip: float = Field(5.0, gt=0.0, le=100.0)
    """Gains (child − parent public score) are clipped to ±this (an invalid child scores −100)."""
    margin: float = Field(0.0, ge=0.0, le=100.0)
    """The pair gate accepts when the new pair's mean pick gain exceeds the old's by more than this."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """The proposer's AST edits per child (the `mutate` proposer)."""


class RSICandidateRow(Row):
    """A child as the pair saw it: which policy proposed it, which WM predicted it, and
    whether it was the executed top pick. Written by rsi_anything's sample, warm-up and
    gate stages; read by its distill stage, report and analysts (append).
    Key: (run_id, round, phase, batch, policy_ver, cand_id)."""

    run_id: str
    round: int
    phase: Literal["warmup", "online", "validate"]
    batch: int
    """Validation draw index (-1 outside validation)."""
    seed: int
    cand_id: str
    parent_id: str
    operator: str
    policy_ver: str
    wm_ver: str
    features: list[float]
    pred_gain: float
    selected: bool
    """Online: the WM's top pick (the one executed); warm-up and validation: every child runs."""


class RSIExecutionRow(Row):
    """One child's public result (and, for the registered program, its hidden one).
    Written by rsi_anything's execute, warm-up and gate stages; read by distill, gate and
    analysts (append). Key: (run_id, phase, round, cand_id, parent_id)."""

    run_id: str
    round: int
    phase: Literal["warmup", "online", "validate", "final"]
    cand_id: str
    parent_id: str
    online_score: float
    """Mean primary metric over the public (select) cases."""
    parent_score: float
    gain: float
    """online_score − parent_score, clipped to ±gain_clip."""
    hidden_score: Optional[float]
    """The holdout mean: only for the registered program (phase "final")."""
    test_calls: int
    """Public cases executed for this row (0 when the result was already known)."""


class WMVersionRow(Row):
    """A WM reliability check and, when it adapts, the new version. Written by
    rsi_anything's distill stage (append). Key: (run_id, round, ver)."""

    run_id: str
    round: int
    ver: str
    parent: Optional[str]
    train_pairs: int
    calib_error: Optional[float]
    """Mean |pred − actual| of the checked version over its own pairs."""
    coverage: float
    n_pairs: int
    status: Literal["initial", "reliable", "insufficient_evidence", "unreliable", "candidate"]
    """The check's verdict on `parent` ("candidate": `ver` is its refit, sent to the gate)."""


class PairCheckRow(Row):
    """A compatibility-gate check: the assembled pair against the old pair on the same
    validation draws. Written by rsi_anything's gate (append). Key: (run_id, round)."""

    run_id: str
    round: int
    policy_ver: str
    wm_ver: str
    old_policy_ver: str
    old_wm_ver: str
    policy_part: bool
    wm_part: bool
    metric_new: float
    """Mean actual gain of the assembled pair's picks over the validation draws."""
    metric_old: float
    accepted: bool
    decision_id: str
