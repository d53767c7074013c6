"""Event-keyed verifier noise for the paired_rollouts loop (Luck Is Not Skill), as pure
functions of their arguments.

A rollout's noise events are named by what happened, not by who did it:

- tool_failure: each worked step the rollout wrote (`;`-separated, before `#`) is one
  tool call; its event is the call (the step's text before `=`, e.g. `7+5`: tool and
  resource) and how many times the rollout made that call before (the repeat count). A
  hit on any of its events fails the rollout (observed reward 0). Rollouts that make
  the same calls meet the same events; an empty output is one `answer` call.
- grading_flip: one event `grade`; a hit flips a success to a failure (one-directional).

Every event is hit with probability `noise_rate`, drawn from a hash of (run seed,
step, schedule, case id, event) and, in the independent arm, the rollout's index too.
So in the shared arm all rollouts of a group see exactly the same draws for the same
events (a paired schedule), in the independent arm each rollout has its own, and the
per-rollout marginals are the same in both. Departure from the paper: the simulator is
the arith verifier, and a worked step stands for a (tool, resource) call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from schemas.ids import seed_for
from schemas.post_training import PairedRolloutsConfig
from suites.arith.tasks import ANSWER_MARK, STEP_SEP

UNIT = 16**15
"""`seed_for` returns 15 hex digits: dividing by this maps it to [0, 1)."""


def rollout_events(output: str, kind: str) -> list[str]:
    """The noise events a rollout meets, in order (see the module docstring)."""
    if kind == "grading_flip":
        return ["grade"]
    calls = [s.split("=", 1)[0] for s in output.rsplit(ANSWER_MARK, 1)[0].split(STEP_SEP) if s] or ["answer"]
    seen: dict[str, int] = {}
    events = []
    for call in calls:
        events.append(f"{call}@{seen.get(call, 0)}")
        seen[call] = seen.get(call, 0) + 1
    return events


def event_draw(seed: int, step: int, schedule: str, case_id: str, event: str, rollout: Optional[int]) -> float:
    """Uniform [0, 1) draw of one event; `rollout` None is the shared (paired) key."""
    return seed_for(seed, "noise", step, schedule, case_id, event, "shared" if rollout is None else rollout) / UNIT


def corrupt_group(outcomes: Sequence[float], outputs: Sequence[str], case_id: str, cfg: PairedRolloutsConfig,
                  seed: int, step: int, schedule: str) -> tuple[list[float], list[int]]:
    """Observed rewards of one group's rollouts and the number of noise hits of each.
    A hit zeroes the reward: a failed tool call fails the episode, and a grading flip
    turns a success into a failure; a failure stays a failure either way."""
    observed, hits = [], []
    for index, (outcome, output) in enumerate(zip(outcomes, outputs)):
        rollout = None if cfg.noise_pairing == "shared" else index
        hit = sum(event_draw(seed, step, schedule, case_id, event, rollout) < cfg.noise_rate
                  for event in rollout_events(output, cfg.noise_kind))
        observed.append(0.0 if hit else float(outcome))
        hits.append(hit)
    return observed, hits


def corrupt_batch(outcomes: Sequence[Sequence[float]], outputs: Sequence[Sequence[str]], case_ids: Sequence[str],
                  cfg: PairedRolloutsConfig, seed: int, step: int,
                  schedule: str) -> tuple[list[list[float]], list[list[int]]]:
    """`corrupt_group` over G groups (one per case) -> (observed (G, n), hits (G, n))."""
    pairs = [corrupt_group(o, t, c, cfg, seed, step, schedule) for o, t, c in zip(outcomes, outputs, case_ids)]
    return [p[0] for p in pairs], [p[1] for p in pairs]
