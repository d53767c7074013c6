"""ArenaFlow's score stage: the comparator and the knockout tournament. Pure.

The comparator (the paper's LLM judge; offline a rule) ranks two trajectories by
requirements met (success, then goal conditions met), then fewer failed steps, then
fewer tool calls; a full tie goes to the first (the earlier in the seeded bracket). Each
match returns the winner, its **key steps** (the winner's state-changing steps, i.e.
successful calls of write tools, that the loser lacks, matched on tool and arguments)
and, per key step, the options whose rules fired up to that step (``used_options``:
usage attribution, not causal, as the paper says).

The knockout pairs the bracket in order each round (an odd one out gets a bye); a
trajectory's tournament score is the round it lost in (1 = first round), the champion's
the number of rounds + 1. Group advantages are the scores standardised in the group
(all-equal -> zeros). A key step's survival depth is how many won matches name it a key
step: 1 where it was found, +1 for every later round that re-confirms it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from suites.toolsim.tools import TOOLS


@dataclass(frozen=True)
class Trajectory:
    traj_id: str
    success: bool
    met: int
    """Goal conditions met (toolsim's requirements)."""
    steps: tuple[dict[str, Any], ...]
    choices: tuple[int, ...] = ()

    @property
    def errors(self) -> int:
        return sum(not s["ok"] for s in self.steps)

    @property
    def calls(self) -> int:
        return sum(s["kind"] == "tool_call" for s in self.steps)


@dataclass(frozen=True)
class Match:
    match_id: str
    a: str
    b: str
    winner: str
    round: int
    key_steps: tuple[int, ...]
    used: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Key step index -> options whose rules fired in the winner up to that step."""
    judged_by: str = "rule"
    """``rule``, ``llm``, or ``rule (llm answer unusable: why)`` when the judge's answer was refused."""


def rank_key(t: Trajectory) -> tuple:
    return (t.success, t.met, -t.errors, -t.calls)


def state_changing(step: dict[str, Any]) -> bool:
    return step["kind"] == "tool_call" and step["ok"] and step["name"] in TOOLS and not TOOLS[step["name"]].read


def signature(step: dict[str, Any]) -> tuple[str, str]:
    return step["name"], step["args_json"]


def via(step: dict[str, Any]) -> str | None:
    return json.loads(step["result_json"]).get("via")


def key_steps(winner: Trajectory, loser: Trajectory) -> tuple[int, ...]:
    """Indices of the winner's state-changing steps whose (tool, args) the loser never made."""
    theirs = {signature(s) for s in loser.steps if state_changing(s)}
    return tuple(i for i, s in enumerate(winner.steps) if state_changing(s) and signature(s) not in theirs)


def used_options(t: Trajectory, step_idx: int, option_ids: Sequence[str]) -> tuple[str, ...]:
    """Options whose rule caused a step of ``t`` at or before ``step_idx`` (menu order)."""
    fired = {via(s) for s in t.steps[:step_idx + 1]}
    return tuple(o for o in option_ids if o in fired)


def compare(a: Trajectory, b: Trajectory, round_: int, option_ids: Sequence[str]) -> Match:
    win, lose = (a, b) if rank_key(a) >= rank_key(b) else (b, a)
    keys = key_steps(win, lose)
    return Match(f"{a.traj_id}:{b.traj_id}", a.traj_id, b.traj_id, win.traj_id, round_, keys,
                 {i: used_options(win, i, option_ids) for i in keys})


Judge = Callable[[Trajectory, Trajectory, int, Sequence[str]], Match]
"""(a, b, bracket round, option ids) -> the match: ``compare`` offline, an LLM judge with an endpoint."""


@dataclass(frozen=True)
class Tournament:
    matches: tuple[Match, ...]
    scores: dict[str, int]
    """Round lost in (champion: rounds + 1)."""
    rounds: int
    champion: str


def knockout(bracket: Sequence[Trajectory], option_ids: Sequence[str], judge: Judge = compare) -> Tournament:
    """Single elimination over ``bracket`` in its order (see the module docstring)."""
    alive, matches, scores, round_ = list(bracket), [], {}, 0
    while len(alive) > 1:
        round_ += 1
        nxt = []
        for i in range(0, len(alive) - 1, 2):
            m = judge(alive[i], alive[i + 1], round_, option_ids)
            matches.append(m)
            loser = m.b if m.winner == m.a else m.a
            scores[loser] = round_
            nxt.append(alive[i] if m.winner == alive[i].traj_id else alive[i + 1])
        if len(alive) % 2:
            nxt.append(alive[-1])
        alive = nxt
    scores[alive[0].traj_id] = round_ + 1
    return Tournament(tuple(matches), scores, round_, alive[0].traj_id)


def advantages(t: Tournament) -> dict[str, float]:
    """Tournament scores standardised within the group (population std; zeros when all equal)."""
    values = list(t.scores.values())
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {k: 0.0 if std == 0 else (v - mean) / std for k, v in t.scores.items()}


def survival_depths(t: Tournament) -> dict[str, dict[int, int]]:
    """traj_id -> key step index -> won matches naming it a key step."""
    depths: dict[str, dict[int, int]] = {}
    for m in t.matches:
        mine = depths.setdefault(m.winner, {})
        for i in m.key_steps:
            mine[i] = mine.get(i, 0) + 1
    return depths


def credited_options(t: Tournament) -> dict[str, dict[str, int]]:
    """traj_id -> option -> the deepest survival depth of a key step it was used in."""
    depth, out = survival_depths(t), {}
    for m in t.matches:
        mine = out.setdefault(m.winner, {})
        for i, options in m.used.items():
            for o in options:
                mine[o] = max(mine.get(o, 0), depth[m.winner][i])
    return out
