"""Config and tables of the `rpmem` loop (RPMem, issue 17): arith sessions of key-value
updates (preferences set, changed, invalidated) are compiled into a fixed-size latent,
merged by a learned per-coordinate gate into a fixed-size memory, and decoded into a
LoRA on a frozen tiny LM that answers "get k" without the session text. Imports nothing
of ours but the row base."""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.frozen import Config
from schemas.rows import Row


class RPMemConfig(Config):
    """Parameters of `rpmem` on arith. `--budget` counts training rounds: each trains
    stage 1 (compiler + decoder) for `compile_steps` and stage 2 (the gate only) for
    `merge_steps`, then gates the new memory system against the current one. Paper: 1-64
    sessions, 5 bases, ≈338 GPU h; sizes here are CPU-sized."""

    n_keys: int = Field(6, ge=1, le=12)
    """Keys a user's preferences may hold (a, b, ...); every key is asked after every session."""
    updates: int = Field(4, ge=1, le=16)
    """Updates (set / chg / del) per session."""
    p_delete: float = Field(0.2, ge=0.0, le=1.0)
    """Chance that an update of a key holding a value invalidates it."""
    train_sessions: int = Field(4, ge=1, le=64)
    """Sessions per training user in stage 2 (merged in time order)."""
    eval_sessions: int = Field(8, ge=1, le=64)
    """Sessions per select / holdout user: recall is measured after each, 1..eval_sessions."""
    select_users: int = Field(32, ge=1, le=4096)
    """Users whose recall the gate sees (paired per user x session x key)."""
    holdout_users: int = Field(32, ge=1, le=4096)
    """Users measured only for the registered memory (the `rpm_qa` curve and the swap)."""
    d_mem: int = Field(64, ge=4, le=1024)
    """Size of the latent and of the memory: constant whatever the number of sessions."""
    rank: int = Field(8, ge=1, le=64)
    """Rank of the decoded LoRA."""
    batch: int = Field(32, ge=1, le=1024)
    """Training users per step."""
    compile_steps: int = Field(200, ge=0, le=100_000)
    """Stage-1 steps per round."""
    merge_steps: int = Field(50, ge=0, le=100_000)
    """Stage-2 steps per round."""
    lr: float = Field(1e-2, gt=0.0, le=1.0)
    """Adam learning rate of both stages and the swap."""
    base: str = "student"
    """The base the memory is trained on (`student` or `teacher`, the suite's two widths)."""
    swap_steps: int = Field(100, ge=0, le=100_000)
    """Base swap: steps of the new base's decoder (encoder + gate reused) and, for the same
    steps, of a whole memory system trained from scratch on that base; 0 skips the swap."""
    min_gain: float = Field(0.0, ge=0.0, le=1.0)
    """The gate admits a memory system whose mean select recall gain is above this."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the gate's paired CI."""

    @model_validator(mode="after")
    def _check(self) -> "RPMemConfig":
        if self.base not in ("student", "teacher"):
            raise ValueError(f"rpmem.base={self.base!r}: the bases are 'student' and 'teacher'")
        if self.compile_steps + self.merge_steps == 0:
            raise ValueError("rpmem.compile_steps and rpmem.merge_steps are both 0: a round would train nothing; "
                             "set at least one above 0")
        return self

    def swap_base(self) -> str:
        """The other base: where the swap moves the memory."""
        return "teacher" if self.base == "student" else "student"


class RPMSessionRow(Row):
    """One session written into one user's memory (the spec's ``sessions``), under the
    registered memory system ``candidate_id``. ``latent_hash`` is the content id of the
    memory state after the write (constant size, `d_mem` floats). Written by the memory
    stage; read by analysts. Key: (run_id, candidate_id, user, idx)."""

    run_id: str
    candidate_id: str
    user: str
    split: str
    idx: int
    latent_hash: str
    write_ms: float


class RPMGateStatRow(Row):
    """The merge gate's mean keep and write over the memory's coordinates at one write (the
    spec's ``gate_stats``). Written with ``rpm_sessions``. Key: (run_id, candidate_id, user, idx)."""

    run_id: str
    candidate_id: str
    user: str
    idx: int
    mean_keep: float
    mean_write: float


class RPMQARow(Row):
    """One question after `n_sessions` sessions (the spec's ``qa``): greedy exact match of
    key ``key`` under the LoRA decoded from the memory on base ``base``. Written by the
    memory stage (holdout users, the registered system) and the swap stage. Key: (run_id,
    candidate_id, base, user, n_sessions, key)."""

    run_id: str
    candidate_id: str
    base: str
    user: str
    split: str
    n_sessions: int
    key: str
    correct: bool


class RPMSwapRow(Row):
    """Base swap (the spec's ``swap``): holdout recall on base ``base`` of a decoder trained
    with the encoder and gate reused (``decoder_init`` "reuse") or of a system trained from
    scratch for the same steps ("scratch"), in one ``setting`` ("n=1", "n=<eval_sessions>").
    Written by the swap stage. Key: (run_id, base, decoder_init, setting)."""

    run_id: str
    candidate_id: str
    base: str
    decoder_init: str
    setting: str
    score: float
    n_questions: int
