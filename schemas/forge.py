"""Config and tables of the `forge` loop (FORGE, issue 17): every imperfect trajectory
revises the prompt (the agent's rules) and is abstracted into a failure mode; when the
best validation score stagnates, the failure modes drive verified synthesis of new
training instances with four mutation strategies. Imports nothing of ours but the row base."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row

STRATEGIES = ("same_failure", "counter_example", "boundary", "distractor")
"""The spec's four mutation strategies (``tasks/loops/forge/synth.py``)."""


class ForgeConfig(Config):
    """Parameters of `forge` on toolsim. `--budget` counts optimisation steps (one batch,
    one reflected prompt, one prompt gate; the data gate when validation stagnates).
    Paper: patience "several" steps; batch size and instances per synthesis not given."""

    batch_size: int = Field(8, ge=1, le=256)
    """Training instances per step (drawn from the train split plus admitted synthetic ones)."""
    patience: int = Field(2, ge=1, le=64)
    """Steps without a best-validation improvement that open the data gate."""
    modes_per_synthesis: int = Field(3, ge=1, le=32)
    """Failure modes (most supported first) the generator synthesises from at each stagnation."""
    per_strategy: int = Field(1, ge=1, le=16)
    """Instances generated per (mode, strategy)."""
    strategies: tuple[str, ...] = STRATEGIES
    synthesis: bool = True
    """False: the ablation without the data gate (the prompt loop alone)."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the prompt gate's recorded paired CI."""

    @model_validator(mode="after")
    def _check(self) -> "ForgeConfig":
        unknown = sorted(set(self.strategies) - set(STRATEGIES))
        if unknown or not self.strategies:
            raise ValueError(f"forge.strategies {list(self.strategies)}: unknown {unknown}; known: "
                             f"{', '.join(STRATEGIES)}")
        return self


class FGPromptRow(Row):
    """One prompt version (the spec's ``prompts``): ``id`` is its candidate id (the sha256
    of its harness program), ``text`` the harness JSON. ``val_score`` is None when the
    candidate did not improve its training batch (never run on validation). Written by the
    prompt gate. Key: (run_id, step, id)."""

    run_id: str
    id: str
    step: int
    parent: Optional[str]
    text: str
    batch_score: Optional[float]
    val_score: Optional[float]
    accepted: bool


class FGTrajRow(Row):
    """One trajectory of a prompt on a training instance (the spec's ``trajs``); ``id`` is
    the execution id of its steps in ``steps``; ``synthetic`` when the instance came from
    the data gate. Key: (run_id, id)."""

    run_id: str
    id: str
    step: int
    prompt_id: str
    inst_id: str
    role: str
    """"current" (the prompt in force) or "candidate" (the reflected prompt on the same batch)."""
    score: float
    perfect: bool
    synthetic: bool


class FGFailureModeRow(Row):
    """One failure mode of one failure-memory version (the spec's ``failure_modes``):
    ``signature`` is the JSON of (tool, event, error, missing); ``ver`` the memory
    version's candidate id. Key: (run_id, ver, id)."""

    run_id: str
    id: str
    ver: str
    step: int
    desc: str
    signature: str
    support_traj_ids: list[str]


class FGSynthRow(Row):
    """One synthesised instance and its verification (the spec's ``synth``): ``added_step``
    is the step it joined the training set, None when the verifier rejected it. It never
    joins the validation or held-out split. Key: (run_id, inst_id)."""

    run_id: str
    inst_id: str
    mode_id: str
    strategy: str
    source_inst: str
    payload: str
    valid: bool
    targets_mode: bool
    oracle_edits: Optional[int]
    exhibited: Optional[str]
    """The current rules' failure signature on it (JSON), None when they solve it."""
    verify_calls: int
    """Episodes the verifier ran on it (the current rules, then the oracle's repairs)."""
    added_step: Optional[int]


class FGStagnationRow(Row):
    """The stagnation counter after each step (the spec's ``stagnation``). Key: (run_id, step)."""

    run_id: str
    step: int
    best_val: float
    steps_since_improve: int
    synthesized: bool


class FGCostRow(Row):
    """Calls per step (the spec's ``cost``): prompt episodes, generated instances, verifier
    episodes. Key: (run_id, step)."""

    run_id: str
    step: int
    eval_calls: int
    gen_calls: int
    verify_calls: int
