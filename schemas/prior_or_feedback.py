"""Config and tables of the `prior_or_feedback` loop (Prior-or-Feedback, issue 15): a
measurement protocol on pde1d. Does a config proposer use the experimental feedback in
its trial history, or only its prior? Imports nothing of ours but the row base.

The paper's tables, with its ``run_id`` (one search) renamed ``search_id``: ``run_id``
is the platform run that holds every search of the protocol."""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

POF_PROPOSERS = ("random", "tpe", "prior")


class PriorOrFeedbackConfig(Config):
    """Parameters of `prior_or_feedback`. `--budget` counts seeds (the paper: 3); a search
    runs for every (condition, seed, proposer). The paper's 12 conditions are cut to 2 for
    2 cores; its distance normalisation is not specified (ours: tasks/loops/prior_or_feedback/distance.py)."""

    conditions: tuple[str, ...] = ("burgers:0.1->burgers:0.02", "advection:1.0->burgers:0.05")
    """source -> target pde1d conditions (within and across PDE families)."""
    proposers: tuple[str, ...] = POF_PROPOSERS
    """random (negative control), tpe (positive control), prior (descriptor prior + local
    search; with `proposer='llm'` the LLM replaces it)."""
    trials: int = Field(20, ge=3, le=200)
    """Trials per search (the paper: 20)."""
    decision_points: tuple[int, ...] = (11, 14, 17, 20)
    """Trials t whose proposal is replayed under (c) and (d); t >= 3 and t <= trials count."""
    replays_per_point: int = Field(2, ge=1, le=20)
    """Permutations (c), and control seeds (d), per decision point."""
    tpe_startup: int = Field(10, ge=1, le=200)
    """TPE's random first trials (Optuna's default 10)."""
    cold_starts: tuple[str, ...] = ("advection:1.0->advection:3.0", "burgers:0.5->burgers:0.01")
    """(b): alternative descriptions proposed from at trial 1, everything else unchanged."""
    resamples: int = Field(2000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _check(self) -> "PriorOrFeedbackConfig":
        unknown = sorted(set(self.proposers) - set(POF_PROPOSERS))
        if unknown or "random" not in self.proposers:
            raise ValueError(f"prior_or_feedback.proposers {list(self.proposers)}: unknown {unknown}; they must "
                             f"include 'random' (the matched pool); known: {', '.join(POF_PROPOSERS)}")
        for text in self.conditions + self.cold_starts:
            if text.count("->") != 1:
                raise ValueError(f"prior_or_feedback: a condition is 'source->target', got {text!r}")
        return self


class PofRunRow(Row):
    """One search. Key: (run_id, search_id)."""

    run_id: str
    search_id: str
    source_cond: str
    target_cond: str
    pde_family: str
    """The target's family, or `source>target` across families."""
    seed: int
    proposer: str


class PofTrialRow(Row):
    """One trial of a search. Key: (run_id, search_id, t)."""

    run_id: str
    search_id: str
    t: int
    config_json: str
    val_nrmse: float
    wall_s: float
    proposal_error: str = ""
    """`proposer: llm`: why the answer was not a valid config (the rule-based prior's
    proposal was run instead); "" when the proposer's own config ran."""


class PofFinalTestRow(Row):
    """The best-validation trial, tested once on the holdout. Key: (run_id, search_id)."""

    run_id: str
    search_id: str
    chosen_t: int
    val_nrmse: float
    test_nrmse: float


class PofReplayRow(Row):
    """One replayed proposal. Key: (run_id, search_id, t, intervention, replay_no).
    ``norm_distance`` from the recorded trial-t config (the distance over config_space)."""

    run_id: str
    search_id: str
    t: int
    intervention: str
    """cold_start (b), permuted (c) or control (d)."""
    replay_no: int
    proposed_config_json: str
    norm_distance: float
    proposal_error: str = ""
    """As in pof_trials; such a replay is left out of the feedback sensitivity."""


class PofConfigSpaceRow(Row):
    """CONFIG_SPACE as the run used it. Key: (run_id, param)."""

    run_id: str
    param: str
    kind: str
    range_json: str
    """[low, high] of a numeric parameter, the values of a categorical one."""
