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

Suite version 2 (``ToolSim(version=2)``; payloads carry ``"version": 2``) adds side
effects, so that a harness edit can break what it was not written for:

- ``lost_ack`` (30%, write tools only, in place of the read tools' stale share): the
  write is applied to the true state, then the call fails with
  ``transient_unavailable``. Writes are not idempotent, so a retry applies it again: a
  retried line-item refund refunds twice, a retried reservation reserves twice. So a
  version-2 write fails at the full ``fault_rate``.
- quotas (``backend.py``): every tool answers at most ``CALL_QUOTA`` calls an episode;
  later calls, retries included, fail with ``rate_limited`` (not injected: the agent's
  own calls used the quota up, and no backoff restores it).
- context (``episode.py``): every loaded skill for another template takes
  ``SKILL_CONTEXT_STEPS`` steps off the episode's step budget.

The grading flip is separate and one-directional: with probability ``flip_rate`` per
episode (keyed by ``noise_seed``) a true success is *reported* as a failure. The true
success is always kept next to the observed one (Luck Is Not Skill trains on the
corrupted reward and evaluates on the true one).
"""

from __future__ import annotations

from dataclasses import dataclass

from suites.toolsim.seeding import unit_interval

FAULT_SHARES = (("transient", 0.5), ("rate_limited", 0.2), ("stale", 0.3))
WRITE_SHARES_V2 = (("transient", 0.5), ("rate_limited", 0.2), ("lost_ack", 0.3))
"""Version 2's write faults (see the module docstring)."""
CALL_QUOTA = 6
"""Version 2: calls one tool answers in one episode."""
SKILL_CONTEXT_STEPS = 2
"""Version 2: steps each loaded skill for another template takes off the budget."""
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
    side_effects: bool = False
    """Suite version 2: write tools draw ``lost_ack`` where reads draw ``stale``."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {self.fault_rate}")

    def fault(self, tool: str, resource: str, occurrence: int, read: bool) -> str | None:
        """The fault kind at this event, or None."""
        draw = unit_interval(self.noise_seed, "fault", tool, resource, occurrence)
        edge = 0.0
        for kind, share in WRITE_SHARES_V2 if self.side_effects and not read else FAULT_SHARES:
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
