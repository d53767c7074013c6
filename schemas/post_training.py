"""Configs of the post-training loops on the arith suite (grpo, ppo_pact, opd with its
methods, paired_rollouts, harness_bandit). Cross-field checks run at construction and
name the fix."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from schemas.frozen import Config

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
    dropout: bool = False
    """GRPODropout: drop the high-probability positive-advantage rollouts predicted to
    lower entropy and re-centre the kept advantages (`kernels.grpo_dropout`)."""
    dropout_n_drop: int = Field(1, ge=1, le=63)
    """GRPODropout: most rollouts dropped per group (paper figure: 1 of 8)."""
    dropout_min_effect: float = Field(0.0, ge=0.0)
    """GRPODropout: only rollouts whose entropy-effect proxy exceeds this can be dropped (*not specified*)."""

    @model_validator(mode="after")
    def _check(self) -> "GRPOConfig":
        if not self.categories or len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories {list(self.categories)} must be non-empty and without repeats")
        if self.dropout and self.dropout_n_drop >= self.group_size:
            raise ValueError(f"dropout_n_drop={self.dropout_n_drop} would drop a whole group of group_size="
                             f"{self.group_size}; use dropout_n_drop < group_size")
        return self

class STRIDEMethodConfig(Config):
    """STRIDE as an on-policy distillation method: multi-turn chain episodes of the
    student (`prompts_per_step` distinct ones per step), early stop on teacher support,
    restart from a per-problem prefix buffer. A turn's budget is `max_turn_tokens` (the
    run's `max_new_tokens` does not apply). Both thresholds are *not specified* in the
    paper notes (defaults: this project's)."""

    max_turn_tokens: int = Field(16, ge=2, le=64)
    """Token budget of one agent turn (eos included); a turn that hits it ends the episode."""
    stop_threshold: float = Field(-2.0, le=0.0)
    """Stop a rollout when the token-weighted mean teacher log-prob of its new turns falls below this."""
    pass_threshold: float = Field(-1.0, le=0.0)
    """A buffered turn qualifies for reuse when its mean teacher log-prob is at least this."""
    early_stop: bool = True
    """False plays every episode to its end (the full-OPD and prefix-only arms)."""
    prefix_reuse: bool = True
    """False always starts at turn 0 (the full-OPD and early-stop-only arms)."""

    @model_validator(mode="after")
    def _check(self) -> "STRIDEMethodConfig":
        if self.pass_threshold < self.stop_threshold:
            raise ValueError(
                f"pass_threshold={self.pass_threshold} is below stop_threshold={self.stop_threshold}: "
                "turns weak enough to stop a rollout would qualify for reuse; raise pass_threshold"
            )
        return self

class CLOOPDMethodConfig(Config):
    """CLOOPD as an on-policy distillation method: the teacher scores a batch once, the
    student takes 1-3 clipped passes on the frozen adaptive-alpha target. The bounds and
    the TPMR thresholds are *not specified* in the paper notes (defaults: this project's)."""

    passes: int = Field(2, ge=1, le=3)
    """Passes per batch for allocation="fixed"; tpmr and random use 2 plus an optional third."""
    allocation: Literal["fixed", "tpmr", "random"] = "fixed"
    """fixed: `passes` every batch; tpmr: third pass by the TPMR rule; random: third pass
    with probability `random_third`, the paper's matched-budget control."""
    kl_bound: float = Field(0.5, gt=0.0)
    """Largest sampled KL proxy KL(p_S || q_alpha) the adaptive-alpha target may have."""
    tail_bound: float = Field(2.0, gt=0.0)
    """The 5% quantile of the per-token reward must stay above -tail_bound nats."""
    clip: float = Field(0.2, gt=0.0, le=1.0)
    """Symmetric ratio clip of every pass against the frozen old log-probs."""
    tpmr_min_rate: float = Field(0.0, ge=0.0)
    """TPMR: pass-2 conservative progress per student token must exceed this."""
    tpmr_quota: float = Field(0.5, ge=0.0, le=1.0)
    """TPMR: at most this fraction of batches so far may get a third pass."""
    tpmr_max_pass_kl: float = Field(0.05, gt=0.0)
    """TPMR stability check: approx KL of pass 2 against the frozen old policy."""
    token_budget: int = Field(10_000_000, ge=1)
    """TPMR: student tokens the run may spend on all passes."""
    random_third: float = Field(0.5, ge=0.0, le=1.0)
    """allocation="random": probability of a third pass (match it to TPMR's observed rate)."""

    @model_validator(mode="after")
    def _check(self) -> "CLOOPDMethodConfig":
        if self.allocation != "fixed" and self.passes != 2:
            raise ValueError(
                f"allocation={self.allocation!r} runs 2 passes plus an optional third, but passes={self.passes}; "
                "leave passes at 2 or use allocation='fixed'"
            )
        return self

class PPOPACTConfig(Config):
    """Parameters of the `ppo_pact` loop: actor-critic RL of a tiny arith LM with a learned
    critic, trained either as PPO's value regression or as PACT's importance-corrected BCE
    probability. The number of optimizer steps is the run's `budget`."""

    critic: Literal["ppo", "pact"] = "pact"
    """ppo: the critic regresses the return with PPO's clipped MSE; pact: the actor is
    updated first, then the critic (a sigmoid probability) is trained by BCE toward the
    return, weighted by the updated actor's current-token ratio."""
    prompts_per_step: int = Field(8, ge=1, le=512)
    """Train prompts drawn per optimizer step."""
    group_size: int = Field(8, ge=1, le=64)
    """Rollouts sampled per prompt; their mean outcome is the Monte-Carlo value the critic's
    calibration is measured against."""
    lr: float = Field(1e-4, gt=0.0, le=1.0)
    """AdamW learning rate of the actor (as grpo's: 3e-4 and up degraded the arith warm start)."""
    critic_lr: float = Field(1e-3, gt=0.0, le=1.0)
    """AdamW learning rate of the critic."""
    clip: float = Field(0.2, gt=0.0, le=1.0)
    """PPO clip range of the actor's ratio."""
    value_clip: float = Field(0.2, gt=0.0, le=1.0)
    """ppo only: how far new values may move from the sampling-time values before the clipped branch wins."""
    ratio_low: float = Field(0.8, gt=0.0, le=1.0)
    """pact only: tokens whose ratio new/old is below this carry no critic loss (*not specified*)."""
    ratio_high: float = Field(1.25, ge=1.0, le=10.0)
    """pact only: tokens whose ratio new/old is above this carry no critic loss (*not specified*)."""
    importance_correction: bool = True
    """pact only: False is the paper's ablation (plain BCE toward the return, no ratio, no mask)."""
    max_new_tokens: int = Field(40, ge=4, le=120)
    """Generation budget per rollout (eos included)."""
    temperature: float = Field(1.0, gt=0.0, le=4.0)
    """Sampling temperature of the rollouts (evaluation is greedy)."""
    eval_every: int = Field(10, ge=1, le=100_000)
    """Optimizer steps per training chunk; each chunk ends in checkpoints and a select evaluation."""
    categories: tuple[ArithCategory, ...] = ("add",)
    """Arith task families of the training prompts and the evaluation cases."""
    pretrain_steps: int = Field(300, ge=0, le=100_000)
    """Supervised warm-start steps of the actor before RL; the critic's trunk starts from it."""
    critic_warmup_steps: int = Field(5, ge=0, le=100_000)
    """The first this many optimizer steps train only the critic (on the warm start's
    rollouts), so the actor's first advantages do not read an untrained value; the paper
    pre-trains its critic (how long is *not specified*). They count toward the budget."""

    @model_validator(mode="after")
    def _check(self) -> "PPOPACTConfig":
        if not self.categories or len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories {list(self.categories)} must be non-empty and without repeats")
        if self.critic == "ppo" and not self.importance_correction:
            raise ValueError("importance_correction=False is the PACT ablation; it needs critic='pact'")
        return self

NoisePairing = Literal["shared", "independent"]


class PairedRolloutsConfig(Config):
    """Parameters of the `paired_rollouts` loop (Luck Is Not Skill) beyond GRPO's, which
    it reads from `RunConfig.grpo`: injected verifier noise and the gradient probe."""

    noise_pairing: NoisePairing = "shared"
    """shared: every rollout of a group sees the same noise draw per event key (paired);
    independent: a separate draw per rollout. Per-rollout marginals are equal."""
    noise_kind: Literal["tool_failure", "grading_flip"] = "tool_failure"
    """tool_failure: each worked step written is an event that may fail the rollout;
    grading_flip: one grading event that may flip a success to a failure."""
    noise_rate: float = Field(0.2, ge=0.0, lt=1.0)
    """Probability that one event is hit by noise."""
    probe_every: int = Field(5, ge=1, le=100_000)
    """Steps between gradient-covariance probes (step 0 is always probed)."""
    probe_schedules: int = Field(4, ge=2, le=64)
    """Noise schedules drawn per probe and pairing; the covariance trace needs at least 2."""


class HarnessBanditConfig(Config):
    """Parameters of the `harness_bandit` loop (HarnessBandit) beyond GRPO's, which it
    reads from `RunConfig.grpo` (its `categories` are replaced by `harnesses`)."""

    harnesses: tuple[ArithCategory, ...] = ("add", "sub", "dsum", "rev")
    """The task formats a step may train in, one per step."""
    scheduler: Literal["bandit", "uniform", "round_robin"] = "bandit"
    """bandit: learnability x transferability with a visit bonus and a floor;
    uniform: a seeded uniform draw; round_robin: harness step mod H."""
    learn_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Fusion weight of normalized learnability; transferability gets 1 - this."""
    window: int = Field(20, ge=2, le=10_000)
    """Recent steps whose signals set the min-max normalization."""
    bonus: float = Field(0.5, ge=0.0, le=10.0)
    """Visit-count bonus coefficient c: c * sqrt(ln(t + 1) / (visits + 1))."""
    floor: float = Field(0.1, ge=0.0, le=1.0)
    """Exploration floor: this much probability mass is spread uniformly."""
    temperature: float = Field(0.2, gt=0.0, le=10.0)
    """Softmax temperature over the harnesses' fused score plus bonus."""
    sketch_dim: int = Field(32, ge=2, le=4096)
    """Dimension of the random projection of the output layer's gradient."""
    ema_rate: float = Field(0.3, gt=0.0, le=1.0)
    """Weight of a new gradient sketch in its harness's EMA."""

    @model_validator(mode="after")
    def _check(self) -> "HarnessBanditConfig":
        if len(self.harnesses) < 2 or len(set(self.harnesses)) != len(self.harnesses):
            raise ValueError(f"harnesses {list(self.harnesses)} must name at least 2 distinct arith categories")
        return self

DistillMethod = Literal["opd", "dial", "cal_opd", "attract_repel", "attract_only", "gvpo", "stride", "cloopd"]
TeacherContext = Literal["none", "solution", "method", "angle", "category", "answer"]
CONTRASTIVE_METHODS = ("attract_repel", "attract_only")
RESPONSE_HINT_TOKENS = 48
"""Longest response a method may put in the teacher's hint (the arith TinyLMs hold 128 positions)."""

class DistillRunConfig(Config):
    """Parameters of the `opd` on-policy distillation loop on the arith suite: a frozen
    supervised teacher, a warm-started student, and one loss per optimizer step chosen by
    `method` (Self-Teacher Context, DF-OPD, DIAL-OPD, Cal-OPD, Attract/Repel, GVPO++,
    Two-End). The number of optimizer steps is the run's `budget`. Defaults marked *not
    specified* are this project's choices where the paper notes are silent."""

    method: DistillMethod = "opd"
    """opd: sampled-token reverse KL on every token; dial: OPD on the top keep-ratio tokens
    (DIAL-OPD); cal_opd: only the residual outside the teacher's probe interval;
    attract_repel: contrastive JSD toward the correct-solution teacher and away from a
    wrong-solution teacher, on wrong responses; attract_only: the same with the repel
    weight 0 (ablation); gvpo: group-centred MSE of whole-sequence log-probs (GVPO++ OPD);
    stride: multi-turn chain episodes with early stop on teacher support and prefix-buffer
    restarts (STRIDE, see `stride`); cloopd: 1-3 clipped passes on a batch the teacher
    scored once (CLOOPD, see `cloopd`)."""
    teacher_context: TeacherContext = "none"
    """Privileged context the teacher reads before the prompt (Self-Teacher Context level
    L1 solution ... L5 answer), or none; the student always sees the plain prompt."""
    prompt_source: Literal["fixed", "pool", "teacher_written"] = "pool"
    """fixed: a tiny pool of `fixed_pool_size` train prompts; pool: every train prompt;
    teacher_written: `fixed_pool_size` problems the frozen teacher writes (DF-OPD)."""
    fixed_pool_size: int = Field(8, ge=1, le=10_000)
    """Size of the fixed and teacher-written pools (paper: 8 prompts)."""
    two_end: bool = False
    """Two-End: mask the loss on the middle steps of each worked response (kept in context)."""
    two_end_middle_frac: float = Field(0.2, gt=0.0, lt=1.0)
    """Width of the masked middle band, as a fraction of the response's step tokens (paper: about 20%)."""
    lr: float = Field(3e-4, gt=0.0, le=1.0)
    """AdamW learning rate of the student (no schedule, no weight decay) (*not specified*)."""
    prompts_per_step: int = Field(8, ge=1, le=512)
    """G: prompts drawn per optimizer step (with replacement from the pool)."""
    rollouts: int = Field(4, ge=1, le=64)
    """n: student rollouts per prompt; the contrastive and gvpo methods compare within these groups."""
    max_new_tokens: int = Field(40, ge=4, le=120)
    """Generation budget per rollout (eos included); a response that hits it is truncated."""
    eval_every: int = Field(10, ge=1, le=100_000)
    """Optimizer steps per training chunk; each chunk ends in a checkpoint and a select evaluation."""
    categories: tuple[ArithCategory, ...] = ("add",)
    """Arith task families of the training prompts, the teacher's data and the evaluation cases."""
    teacher_steps: int = Field(1000, ge=1, le=100_000)
    """Supervised steps of the teacher (trained once per (config, teacher_seed) and reused by
    every run in the store)."""
    teacher_seed: int = 0
    """Seed of the teacher: runs that differ only in `seed` share one teacher."""
    pretrain_steps: int = Field(150, ge=0, le=100_000)
    """Supervised warm-start steps of the (smaller) student before distillation."""
    dial_keep_ratio: float = Field(0.4, gt=0.0, le=1.0)
    """DIAL-OPD rho: fraction of each response's tokens that carry loss (paper: 40%)."""
    dial_beta: float = Field(0.5, ge=0.0, le=4.0)
    """DIAL-OPD beta: strength of the log-mean weight ("moderate", *not specified*)."""
    cal_amplification: float = Field(1.0, ge=0.0, le=10.0)
    """Cal-OPD: scale of the probe shifts that set the interval width (*not specified*)."""
    cal_probe: Literal["answer", "solution"] = "answer"
    """Cal-OPD probes: the context level that carries the verdict claim. The positive probe
    gives the teacher the student's own answer (or whole response) as the reference, the
    negative probe another rollout's (see `tasks.loops.opd.opd_methods`)."""
    jsd_beta: float = Field(0.5, gt=0.0, lt=1.0)
    """Attract/Repel: student weight in the JSD mixture (*not specified*)."""
    attract_weight: float = Field(0.5, gt=0.0, le=1.0)
    """Attract/Repel: weight of the pull toward the correct-solution teacher (paper: half)."""
    repel_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Attract/Repel: weight of the push from the wrong-solution teacher (paper: half);
    attract_only ignores it (0)."""
    gvpo_length_power: float = Field(1.0, ge=0.0, le=2.0)
    """GVPO++: sequence log-probs are scaled by length**-power before centring (*not specified*)."""
    stride: STRIDEMethodConfig = STRIDEMethodConfig()
    """method=stride only: thresholds, turn budget and arm switches."""
    cloopd: CLOOPDMethodConfig = CLOOPDMethodConfig()
    """method=cloopd only: passes, their allocation and the target's bounds."""

    @model_validator(mode="after")
    def _check(self) -> "DistillRunConfig":
        if not self.categories or len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories {list(self.categories)} must be non-empty and without repeats")
        if self.method in CONTRASTIVE_METHODS + ("gvpo",) and self.rollouts < 2:
            raise ValueError(f"method={self.method!r} compares rollouts within a group but rollouts={self.rollouts}; "
                             "use rollouts >= 2")
        if self.method in CONTRASTIVE_METHODS and self.teacher_context != "none":
            raise ValueError(f"method={self.method!r} builds its own teacher contexts (the correct solution and "
                             f"another wrong one); leave teacher_context at 'none' (got {self.teacher_context!r})")
        if self.method == "attract_repel" and self.repel_weight == 0:
            raise ValueError("method='attract_repel' with repel_weight=0 is the ablation; use method='attract_only'")
        if self.two_end and self.method == "gvpo":
            raise ValueError("two_end masks per-token losses but gvpo's loss is per sequence; set two_end=false")
        reads_responses = self.method in CONTRASTIVE_METHODS or (self.method, self.cal_probe) == ("cal_opd", "solution")
        if reads_responses and self.max_new_tokens > RESPONSE_HINT_TOKENS:
            raise ValueError(f"method={self.method!r} gives the teacher another response as its hint, so hint, prompt "
                             f"and response must fit its 128 positions; use max_new_tokens <= {RESPONSE_HINT_TOKENS} "
                             f"(got {self.max_new_tokens})")
        if self.method == "stride":
            self._check_stride()
        return self

    def _check_stride(self) -> None:
        """STRIDE plays its own multi-turn chain episodes, one per drawn train problem."""
        if "chain" not in self.categories:
            raise ValueError(f"method='stride' plays chain episodes; add 'chain' to categories "
                             f"(got {list(self.categories)})")
        if self.rollouts != 1:
            raise ValueError(f"method='stride' keeps one trajectory per problem in its prefix buffer, so it plays one "
                             f"episode per drawn problem; set rollouts=1 (got {self.rollouts})")
        if self.teacher_context != "none" or self.prompt_source != "pool" or self.two_end:
            raise ValueError("method='stride' draws its episodes from the train split and scores whole turns: leave "
                             "teacher_context='none', prompt_source='pool' and two_end=false")
