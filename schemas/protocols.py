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
    harnesses, paired on every task and noise seed."""

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
    """The pre-registered template grouping of the subgroup permutation test: exactly two
    groups that cover every template once. Stored with the run before any execution."""
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
