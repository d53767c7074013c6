"""Validated configs: what a loop modifies, how candidates are sandboxed, and each
loop's parameters. Cross-field checks run at construction and name the fix."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

ArtifactKind = Literal["program", "rules", "skills", "prompt", "config", "weights", "scheduler"]
ProposerKind = Literal["mutate", "llm", "optuna"]
MUTATION_OPERATORS = ("constant", "operator", "compare", "statement", "swap_lines", "crossover")


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoopSpec(Config):
    """What a loop improves and which scorer anchors it. The anchor is fixed per run:
    a gate refuses evidence scored by any other scorer version, so a candidate can never
    change the ruler it is measured with."""

    name: str
    modifies: ArtifactKind
    """The artifact kind the loop's candidates are."""
    anchor: Literal["suite"] = "suite"
    """Which scorer anchors the loop: the suite's own trusted scorer."""
    paper: str
    """The method's source, as named in shared/loops/."""


class SandboxConfig(Config):
    """Limits of the subprocess sandbox that runs untrusted candidate code."""

    kind: Literal["subprocess", "inprocess"] = "subprocess"
    """`subprocess` for untrusted code; `inprocess` only for trusted code."""
    timeout_s: float = Field(10.0, gt=0)
    """Wall-clock limit per case; the whole process group is killed past it."""
    memory_mb: int = Field(1024, ge=64)
    """Address-space limit of the candidate process."""
    max_processes: int = Field(64, ge=1)
    """RLIMIT_NPROC inside the sandbox (stops fork bombs)."""
    max_output_bytes: int = Field(1_000_000, ge=1024)
    """Largest file (and captured stdout) the candidate may write."""


class EvolveConfig(Config):
    """Parameters of the `evolve` research agent (the inner loop AIDE² improves)."""

    islands: int = Field(4, ge=1, le=64)
    """Sub-populations evolved apart, for diversity."""
    children_per_round: int = Field(8, ge=1, le=256)
    """K: children proposed and evaluated per round."""
    tournament_size: int = Field(3, ge=1, le=32)
    """Parents are the best of this many archive members drawn from the island."""
    crossover_rate: float = Field(0.2, ge=0.0, le=1.0)
    """Chance that a child is a crossover of two parents rather than a mutation."""
    migration_interval: int = Field(4, ge=1)
    """Every this many rounds, each island receives the best member of its neighbour."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """Upper bound of AST edits applied to one child."""
    failure_memory: bool = True
    """Whether the proposer reads the distilled failure memory."""
    failure_min_support: int = Field(3, ge=1)
    """Occurrences before an (operator, error kind) pair enters the failure memory."""
    gate_min_delta: float = Field(1e-9, ge=0.0)
    """A child must beat the champion's select mean by more than this to be accepted."""


ArithCategory = Literal["add", "sub", "dsum", "rev", "sort", "chain"]


class GRPOConfig(Config):
    """Parameters of the `grpo` post-training loop (GRPO / Dr. GRPO with the Phantom
    Advantages group filter) on the arith suite's tiny LMs. The number of optimizer steps
    is the run's `budget`."""

    prompts_per_step: int = Field(8, ge=1, le=512)
    """G: train prompts drawn per optimizer step (the groups)."""
    group_size: int = Field(8, ge=2, le=64)
    """n: rollouts sampled per prompt; advantages are relative within a group."""
    lr: float = Field(1e-4, gt=0.0, le=1.0)
    """AdamW learning rate of the policy (no schedule, no weight decay)."""
    clip: float = Field(0.2, gt=0.0, le=1.0)
    """PPO clip range on both sides of the ratio."""
    max_new_tokens: int = Field(40, ge=4, le=120)
    """Generation budget per rollout (eos included); also the shaped reward's length scale."""
    temperature: float = Field(1.0, gt=0.0, le=4.0)
    """Sampling temperature of the rollouts (evaluation is greedy)."""
    advantage: Literal["grpo", "dr_grpo"] = "grpo"
    """grpo: (r - mean) / std per group, sequence-mean loss; dr_grpo: r - mean, loss summed
    over tokens / (B * max_new_tokens)."""
    group_filter: Literal["none", "outcome", "shaped"] = "outcome"
    """Drop degenerate groups from the loss: by the binary outcome (safe), by the shaped
    reward (keeps all-wrong groups: phantom advantages), or not at all."""
    reward: Literal["outcome", "shaped"] = "outcome"
    """The reward the advantages read: exact match (0/1), or exact match minus the length term."""
    length_coef: float = Field(0.1, ge=0.0, le=1.0)
    """Coefficient of the shaped reward's length term (at most this much per rollout)."""
    eval_every: int = Field(10, ge=1, le=100_000)
    """Optimizer steps per training chunk; each chunk ends in a checkpoint and a select evaluation."""
    categories: tuple[ArithCategory, ...] = ("add",)
    """Arith task families of the training prompts and the evaluation cases."""
    pretrain_steps: int = Field(300, ge=0, le=100_000)
    """Supervised warm-start steps of the student before RL, so its rollouts earn some reward."""

    @model_validator(mode="after")
    def _check(self) -> "GRPOConfig":
        if not self.categories or len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories {list(self.categories)} must be non-empty and without repeats")
        return self


class RunConfig(Config):
    """Everything a loop run depends on; stored in `runs.config_json` so that
    `ratchet resume` re-enters the run with exactly the same parameters."""

    loop: str
    suite: str
    budget: int = Field(ge=1)
    """Candidate evaluations (evolve) or outer nodes (aide2)."""
    seed: int = 0
    proposer: ProposerKind = "mutate"
    workers: int = Field(2, ge=1, le=256)
    dask_address: Optional[str] = None
    sandbox: SandboxConfig = SandboxConfig()
    evolve: EvolveConfig = EvolveConfig()
    grpo: GRPOConfig = GRPOConfig()
    """grpo only: the post-training loop's parameters (budget = optimizer steps)."""
    suite_params: dict[str, float | int | str | list[str]] = {}
    tracking: bool = True
    """Log every candidate to MLflow (a null tracker when off)."""
    inner_budget: int = Field(16, ge=1)
    """aide2 only: evolve's candidate budget per selection suite per outer node."""
    inner_suites: tuple[str, ...] = ("circle_packing", "bin_packing")
    """aide2 only: the selection suites a candidate agent is run on."""

    @model_validator(mode="after")
    def _check(self) -> "RunConfig":
        if self.dask_address is not None and not self.dask_address.startswith(("tcp://", "tls://", "inproc://")):
            raise ValueError(
                f"dask_address {self.dask_address!r} must be a scheduler address like tcp://127.0.0.1:8786"
            )
        return self
