"""Configs of the measurement-protocol loops (family ``protocol``): fixed arms compared
on paired cases and seeds; nothing is proposed or admitted."""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.frozen import Config

TOOLSIM_TEMPLATES = (
    "cancel_latest_order", "refund_unshipped_order", "refund_damaged_item", "change_address", "reserve_stock",
    "open_ticket", "apply_coupon", "order_status_message",
)
"""toolsim's request templates, named here so a pre-registered grouping is checked when
the config is made (before any result exists)."""


class HarnessOrModelConfig(Config):
    """Parameters of `harness_or_model` (Harness or Model): one frozen agent under two
    harnesses, paired on every task and noise seed (toolsim: the procedural agent;
    codemidas: the coding policy of `tasks/loops/harness_or_model/coder.py`)."""

    harness_a: str = "native"
    """The baseline arm: a harness file of `tasks/loops/harness_or_model/harnesses/`."""
    harness_b: str = "neutral"
    """The compared arm; differences are reported as b − a."""
    missing_usage_rate: float = Field(0.07, ge=0.0, le=0.5)
    """Share of runs whose usage record is dropped on purpose (seeded), as the paper's 58
    runs without usage: the cost audit must bound what they could change."""
    groups: dict[str, list[str]] = {
        "writes_money": ["cancel_latest_order", "refund_unshipped_order", "refund_damaged_item", "apply_coupon"],
        "other": ["change_address", "reserve_stock", "open_ticket", "order_status_message"],
    }
    """The pre-registered template grouping of the subgroup permutation test (toolsim):
    exactly two groups that cover every template once. Stored with the run before any
    execution. On codemidas the groups are fixed by the task specs alone: tasks with a
    docstring and tasks without one."""
    codemidas_tasks: int = Field(28, ge=2, le=64)
    """On codemidas: the first this many kept tasks, in shipped order (28 are kept)."""
    price_in: float = Field(1.0, ge=0.0)
    """Frozen list price per 1k uncached input tokens (price units, not a currency)."""
    price_cached: float = Field(0.1, ge=0.0)
    price_out: float = Field(4.0, ge=0.0)
    resamples: int = Field(2000, ge=100, le=100_000)
    """Task-bootstrap resamples of each CI, and label permutations of the subgroup test."""

    @model_validator(mode="after")
    def _check(self) -> "HarnessOrModelConfig":
        if self.harness_a == self.harness_b:
            raise ValueError(f"harness_a and harness_b are both {self.harness_a!r}; compare two different harnesses")
        listed = [t for members in self.groups.values() for t in members]
        if len(self.groups) != 2 or sorted(listed) != sorted(TOOLSIM_TEMPLATES):
            raise ValueError("groups must be two groups that together list every toolsim template once: "
                             + ", ".join(TOOLSIM_TEMPLATES))
        return self


class DataSenseConfig(Config):
    """Parameters of `datasense` (DataSense-Bench on arith): a pool with planted defects,
    selectors that split it into equal groups with a predicted ranking, a fresh student
    trained per group with one recipe, verified on the hidden holdout split."""

    categories: tuple[str, ...] = ("add", "rev", "sort")
    pool_size: int = Field(500, ge=10, le=20_000)
    groups: int = Field(5, ge=2, le=20)
    wrong_label_share: float = Field(0.2, ge=0.0, le=0.9)
    duplicate_share: float = Field(0.15, ge=0.0, le=0.9)
    off_task_share: float = Field(0.1, ge=0.0, le=0.9)
    selectors: tuple[str, ...] = ("random", "loss", "length", "dedup_difficulty", "mixed")
    base_steps: int = Field(300, ge=1, le=100_000)
    """Supervised steps of the frozen base: the selectors' forward passes and every student's start."""
    sft_steps: int = Field(120, ge=1, le=100_000)
    batch_size: int = Field(16, ge=1, le=1024)
    lr: float = Field(3e-4, gt=0.0, le=1.0)
    random_subsets: int = Field(5, ge=1, le=100)
    """Equal-size random subsets trained as the reference (many, not the paper's one)."""
    resamples: int = Field(2000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _check(self) -> "DataSenseConfig":
        if self.pool_size % self.groups:
            raise ValueError(f"pool_size {self.pool_size} does not split into {self.groups} equal groups")
        if self.wrong_label_share + self.duplicate_share + self.off_task_share > 0.95:
            raise ValueError("the defect shares add up to more than 0.95; leave some clean rows")
        unknown = set(self.selectors) - set(SELECTORS)
        if unknown or not self.selectors:
            raise ValueError(f"unknown selectors {sorted(unknown)}; known: {', '.join(SELECTORS)}")
        return self


SELECTORS = ("random", "loss", "length", "dedup_difficulty", "mixed")


class BetterTurnsConfig(Config):
    """Parameters of `better_turns` (Better Turns): behaviour-cloned toolsim policies,
    base and SFT, scored turn by turn on the reference history (L1–L3) and in closed
    loop on their own history (L4–L5), on the same held-out conversations."""

    base_templates: tuple[str, ...] = ("cancel_latest_order", "change_address", "reserve_stock", "apply_coupon")
    """The mismatched templates the base checkpoint is trained on (the SFT data covers all)."""
    base_logs: int = Field(2, ge=1, le=1000)
    """Reference conversations per base template the base sees (few logs)."""
    base_epochs: int = Field(2, ge=1, le=100)
    sft_epochs: int = Field(5, ge=1, le=100)
    """Epochs of SFT from the base on every train conversation (the paper's 5)."""
    lr: float = Field(0.5, gt=0.0, le=10.0)
    batch_size: int = Field(8, ge=1, le=1024)
    retries: int = Field(2, ge=0, le=20)
    """Tool errors handed back to the model in closed loop before the run ends (the
    paper leaves its limit unspecified)."""
    eval_splits: tuple[str, ...] = ("select", "protected", "holdout", "test")
    """The held-out conversations every checkpoint is scored on (train is the SFT data)."""
    high_sim: float = Field(0.9, ge=0.0, le=1.0)
    """A conversation whose mean L1 similarity reaches this and does not complete is a
    disagreement case."""
    resamples: int = Field(2000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _check(self) -> "BetterTurnsConfig":
        unknown = sorted(set(self.base_templates) - set(TOOLSIM_TEMPLATES))
        if unknown or not self.base_templates:
            raise ValueError(f"base_templates {unknown or '()'} are not toolsim templates; known: "
                             + ", ".join(TOOLSIM_TEMPLATES))
        if "train" in self.eval_splits or not self.eval_splits:
            raise ValueError(f"eval_splits {self.eval_splits} must be held out: name splits other than train")
        return self


TRACE_CONDITIONS = ("original", "rename", "reorder", "swap_descriptions", "rerun")
TRACE_AGENTS = ("semantic", "literal")
TRACE_GRADERS = ("final_state", "trace_match")


class TraceConfig(Config):
    """Parameters of `trace` (TRACE on toolsim): each agent on every task under each
    condition (and an identical rerun under other event-keyed faults), the stored
    trajectories graded by version 1 and rescored by version 2 without re-running."""

    agents: tuple[str, ...] = TRACE_AGENTS
    """``semantic`` picks a tool by its description, ``literal`` by the name it was written against."""
    conditions: tuple[str, ...] = TRACE_CONDITIONS
    """``original`` and ``rerun`` are required: the pair's baseline and the noise floor."""
    graders: tuple[str, ...] = TRACE_GRADERS
    margin: float = Field(0.10, gt=0.0, le=1.0)
    """The pre-set equivalence margin on Δreward."""
    rescore_version: str = "2"
    """The grader version the stored trajectories are rescored under (the fixed rule)."""
    resamples: int = Field(2000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _check(self) -> "TraceConfig":
        for label, given, known in (("agents", self.agents, TRACE_AGENTS), ("conditions", self.conditions,
                                    TRACE_CONDITIONS), ("graders", self.graders, TRACE_GRADERS)):
            unknown = sorted(set(given) - set(known))
            if unknown or not given:
                raise ValueError(f"unknown trace {label} {unknown}; known: {', '.join(known)}")
        if not {"original", "rerun"} <= set(self.conditions) or len(self.conditions) < 3:
            raise ValueError("conditions must hold original, rerun and at least one perturbation")
        return self

