"""Configs of the admission-control loops on the toolsim suite (self_healing,
growing_harness, medrsi, designer_rsi)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.frozen import Config


class HealConfig(Config):
    """Parameters of the `self_healing` loop (Self-Healing Harness) beyond its replay
    gate, which has the paper's fixed sizes (3 failing + 2 protected cases)."""

    guard: bool = True
    """Run the library guard: periodically re-test the whole active rule set and retire
    members whose removal does not hurt. False for the no-guard ablation."""
    guard_interval: int = Field(3, ge=1, le=1000)
    """Admissions between two guard re-tests (the paper does not give its interval)."""
    accept_all: bool = False
    """Ablation: admit every proposed rule (the replay still runs and is recorded, the
    decision reads "accept_all ablation"). The paper has no accept-directly arm."""

class GrowConfig(Config):
    """Parameters of the `growing_harness` loop (Growing Harness). The paper gives the
    gate interval (1 or 8 fixed tasks) but not the window size or the retry limit; these
    defaults are this project's. The number of repair steps is the run's `budget`."""

    window_size: int = Field(8, ge=1, le=256)
    """Most failing train tasks in the rolling failure window at once."""
    gate_every: int = Field(1, ge=0, le=1000)
    """Validate after this many fixed tasks (paper: 1 or 8), and once before the final
    test; 0 turns the gate off (the accept-everything ablation)."""
    repair_batch: int = Field(3, ge=1, le=16)
    """Most edits in one joint patch, each from window failures the earlier ones did not cover."""
    retry_limit: int = Field(2, ge=1, le=100)
    """Failed repair attempts after which a task exits the window unsolved."""
    tolerance: float = Field(0.0, ge=0.0, le=1.0)
    """Roll back when validation success is below the last accepted version's by more than
    this (paper: any drop, 0)."""

class MedRSIConfig(Config):
    """Parameters of the `medrsi` loop (MedRSI): fast discovery into an experimental
    pool, slow registration after a trial on later request batches. The paper gives no
    threshold, batch size or pool size; these defaults are this project's."""

    trial_batches: int = Field(3, ge=1, le=20)
    """Later batches a pooled tool is trialled on before the registration decision (paper: 3)."""
    batch_size: int = Field(8, ge=1, le=1000)
    """Requests per trial batch, drawn in a fixed order from the select and protected splits."""
    gain_threshold: float = Field(0.0, ge=0.0, le=1.0)
    """Register iff the mean balanced-success gain over the trial batches exceeds this."""
    pool_capacity: int = Field(3, ge=1, le=64)
    """Most tools in the experimental pool at once; no tool is built while it is full."""
    slow_registration: bool = True
    """False: the no-delay ablation registers every discovery-admitted tool at once."""

class DesignerConfig(Config):
    """Parameters of the `designer_rsi` loop (Designer-RSI) on toolsim. The number of
    traffic rounds is the run's `budget`; each round writes at most one edit."""

    mode: Literal["both", "expansion_only", "revision_only"] = "both"
    """Which pools may write edits: gaps (expand), failing library items (deepen), or both
    (the paper's ablation)."""
    gap_threshold: int = Field(3, ge=1, le=100)
    """Distinct traffic cases an uncovered gap needs before a skill is written (paper: 3).
    The gap_skill and extract_skill operators themselves also want 3 failing cases."""
    revise_threshold: int = Field(2, ge=1, le=100)
    """Failing traffic cases a library item must co-occur with before it is deepened
    (paper: "repeatedly", no number)."""
    traffic_batch: int = Field(8, ge=1, le=10_000)
    """Train cases (user requests) the champion serves per round."""
    replay_targets: int = Field(6, ge=1, le=1000)
    """Most cases of the gap / failing item the candidate is replayed on."""
    replay_successes: int = Field(6, ge=0, le=1000)
    """Most old successes replayed too, those that exercised the same template or item
    first (paper: the old skill's successes; count not given)."""
