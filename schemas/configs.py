"""Validated configs: what a loop modifies, how candidates are sandboxed, and each
loop's parameters. Cross-field checks run at construction and name the fix."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from schemas.admission import DesignerConfig, GrowConfig, HealConfig, MedRSIConfig
from schemas.frozen import Config
from schemas.loops import HARNESS_LOOPS, LOOP_SPECS, STARTS_FROM_CHAMPION, ArtifactKind, LoopSpec, check_suite

__all__ = ["ArtifactKind", "HARNESS_LOOPS", "LOOP_SPECS", "LoopSpec", "RunConfig", "SandboxConfig", "EvolveConfig"]
from schemas.post_training import (
    DistillRunConfig,
    GRPOConfig,
    HarnessBanditConfig,
    PairedRolloutsConfig,
    PPOPACTConfig,
)

ProposerKind = Literal["mutate", "llm", "optuna"]
MUTATION_OPERATORS = ("constant", "operator", "compare", "statement", "swap_lines", "crossover")


class SandboxConfig(Config):
    """Limits of the subprocess sandbox that runs untrusted candidate code.

    Time limits measure the candidate, not the machine: a case is cut by the CPU time
    the sandbox's processes used on it (`case_cpu_s`, measured by the parent), which a
    busy machine does not inflate. The wall clock is only a looser backstop
    (`case_wall_s` = wall_factor x the CPU limit) for candidates that sleep or block.
    Loading the runner and the program in a fresh child (imports, module-level code)
    has its own allowance, `load_limit_s`, charged to no case."""

    kind: Literal["subprocess", "inprocess"] = "subprocess"
    """`subprocess` for untrusted code; `inprocess` only for trusted code."""
    timeout_s: float = Field(10.0, gt=0)
    """Time limit per case: the CPU-time limit unless `cpu_limit_s` is set, and so the
    base of the wall-clock backstop; past either, the whole sandbox is killed."""
    cpu_limit_s: Optional[float] = Field(None, gt=0)
    """CPU-time limit per case (user + system time of every process in the sandbox);
    None: `timeout_s`."""
    wall_factor: float = Field(5.0, ge=1.0)
    """The wall-clock backstop of a case, and of loading, is this many times its CPU
    limit; it catches candidates that sleep or block without using CPU."""
    load_limit_s: float = Field(10.0, gt=0)
    """CPU-time allowance, once per child, for loading the runner and the program
    (imports such as numpy, module-level code), apart from every case's limit; its
    wall backstop is `wall_factor` times it."""
    memory_mb: int = Field(1024, ge=64)
    """Address-space limit of the candidate process."""
    max_processes: int = Field(64, ge=1)
    """RLIMIT_NPROC inside the sandbox (stops fork bombs)."""
    max_output_bytes: int = Field(1_000_000, ge=1024)
    """Largest file (and captured stdout) the candidate may write."""

    @property
    def case_cpu_s(self) -> float:
        """The CPU-time limit of one case."""
        return self.timeout_s if self.cpu_limit_s is None else self.cpu_limit_s

    @property
    def case_wall_s(self) -> float:
        """The wall-clock backstop of one case."""
        return self.wall_factor * self.case_cpu_s


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
    llm_max_tokens: int = Field(1024, ge=16, le=32768)
    """llm proposer: the most tokens one answer may have (``max_tokens`` of the request)."""
    llm_timeout_s: float = Field(600.0, gt=0)
    """llm proposer: seconds one call may take; past it the child is recorded as unusable."""


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
    opd: DistillRunConfig = DistillRunConfig()
    """opd only: the on-policy distillation loop's parameters (budget = optimizer steps)."""
    paired_rollouts: PairedRolloutsConfig = PairedRolloutsConfig()
    """paired_rollouts only: noise and probe parameters (GRPO's are `grpo`)."""
    harness_bandit: HarnessBanditConfig = HarnessBanditConfig()
    """harness_bandit only: harnesses and scheduler (GRPO's are `grpo`)."""
    ppo_pact: PPOPACTConfig = PPOPACTConfig()
    """ppo_pact only: the actor-critic loop's parameters (budget = optimizer steps)."""
    medrsi: MedRSIConfig = MedRSIConfig()
    """medrsi only: trial length, batch size, registration threshold, pool capacity."""
    heal: HealConfig = HealConfig()
    """self_healing only: the library guard and the accept-all ablation."""
    grow: GrowConfig = GrowConfig()
    """growing_harness only: window, gate interval, joint-repair size, retry limit."""
    designer: DesignerConfig = DesignerConfig()
    """designer_rsi only: gap threshold, traffic batch, replay sizes, ablation mode."""
    suite_params: dict[str, float | int | str | list[str]] = {}
    start_from: Literal["seed", "champion"] = "seed"
    """Round 0's candidate: the suite's seed, or the store's current champion of this run's
    registry name (``suite/loop``), so a scheduled run continues from the last one."""
    tracking: bool = True
    """Log every candidate to MLflow (a null tracker when off)."""
    inner_budget: int = Field(16, ge=1)
    """aide2 only: evolve's candidate budget per selection suite per outer node."""
    inner_suites: tuple[str, ...] = ("circle_packing", "bin_packing")
    """aide2 only: the selection suites a candidate agent is run on."""

    @model_validator(mode="after")
    def _check(self) -> "RunConfig":
        check_suite(self.loop, self.suite)
        if self.dask_address is not None and not self.dask_address.startswith(("tcp://", "tls://", "inproc://")):
            raise ValueError(
                f"dask_address {self.dask_address!r} must be a scheduler address like tcp://127.0.0.1:8786"
            )
        if self.loop == "paired_rollouts" and self.grpo.reward != "outcome":
            raise ValueError("paired_rollouts injects noise into the binary outcome; set grpo.reward='outcome'")
        if self.start_from == "champion" and self.loop not in STARTS_FROM_CHAMPION:
            raise ValueError(f"start_from='champion' continues a program or harness search; {self.loop} cannot "
                             f"(loops that can: {', '.join(STARTS_FROM_CHAMPION)}); use start_from='seed'")
        if self.loop in HARNESS_LOOPS and self.proposer == "optuna":
            raise ValueError(f"proposer='optuna' tunes configs, but {self.loop} edits a harness; use "
                             "proposer='mutate' (the rule proposer) or 'llm' (a chat endpoint)")
        return self
