"""Injected noise keyed by event, so that two executions can share it exactly.

A tool-call event is ``(tool, resource, occurrence)``: the tool, the resource its call
targets (the order id of ``get_order``, the user id of ``list_orders``, ...) and how many
earlier calls of that tool on that resource the episode made. Whether the event fails,
and how, is ``unit_interval(noise_seed, "fault", tool, resource, occurrence)`` against
the rates below: a pure function of the event, never of the step number or of anything
else the agent did. So two executions with the same ``noise_seed`` see exactly the same
fault at every event they both reach (paired replay, as Luck Is Not Skill's paired arm
and the replay gates of Self-Healing Harness and Designer-RSI need), while different
seeds draw independent noise with the same marginals.

Fault kinds, as shares of ``fault_rate``:

- ``transient`` (50%): the call fails with ``transient_unavailable``; a retry is a new
  event (the next occurrence) and usually succeeds.
- ``rate_limited`` (20%): the call fails with ``rate_limited`` and the tool stays
  blocked for ``RATE_LIMIT_WAIT`` ticks: an immediate retry fails again, a retry after a
  backoff of at least that many ticks is a new event.
- ``stale`` (30%, read tools only): the read is served by the lagging replica and
  marked ``"stale": true``. Write tools have no stale kind, so their fault rate is 70%
  of ``fault_rate``.

The grading flip is separate and one-directional: with probability ``flip_rate`` per
episode (keyed by ``noise_seed``) a true success is *reported* as a failure. The true
success is always kept next to the observed one (Luck Is Not Skill trains on the
corrupted reward and evaluates on the true one).
"""

from __future__ import annotations

from dataclasses import dataclass

from suites.toolsim.seeding import unit_interval

FAULT_SHARES = (("transient", 0.5), ("rate_limited", 0.2), ("stale", 0.3))
RATE_LIMIT_WAIT = 2
"""Ticks an agent must wait after a rate-limited call before the tool answers again."""


@dataclass(frozen=True)
class FaultEvent:
    """One drawn event and its outcome (``fault`` None: the call went through)."""

    tool: str
    resource: str
    occurrence: int
    fault: str | None


@dataclass(frozen=True)
class FaultSchedule:
    """The fault of every event, drawn from ``noise_seed`` (see the module docstring)."""

    noise_seed: int
    fault_rate: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {self.fault_rate}")

    def fault(self, tool: str, resource: str, occurrence: int, read: bool) -> str | None:
        """The fault kind at this event, or None."""
        draw = unit_interval(self.noise_seed, "fault", tool, resource, occurrence)
        edge = 0.0
        for kind, share in FAULT_SHARES:
            if kind == "stale" and not read:
                continue
            edge += self.fault_rate * share
            if draw < edge:
                return kind
        return None


def grading_flipped(noise_seed: int, flip_rate: float) -> bool:
    """Whether this episode's success is reported as a failure (one-directional)."""
    if not 0.0 <= flip_rate <= 1.0:
        raise ValueError(f"flip_rate must be in [0, 1], got {flip_rate}")
    return unit_interval(noise_seed, "grading_flip") < flip_rate
