"""One ArenaFlow round on toolsim, as pure functions of their arguments (no store, no
Prefect; the stage tasks and the findings script call them). Episodes are simulated in
process: the policy and the rule menu are ours (trusted), no candidate code runs.

    for every request of the round's batch:
        sample:  recall the template's skills, select top_k by utility, add their priors;
                 the policy samples a group of G decision vectors
        execute: each vector's harness runs the request (same noise: a paired group)
        score:   knockout tournament -> winner, key steps, skills used at key steps,
                 trajectory advantages from the final ranking
        distill: step advantages (survival-depth credit, never flipping a negative);
                 the champion's credited options merged into the library
    gate:     utilities accumulate from usage attribution; negative after min_obs -> pruned
    register: one policy update with the step advantages; the active library"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from schemas.ids import derived_id, seed_for
from suites.base import Case
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import parse_harness
from tasks.loops.arenaflow import policy as pol
from tasks.loops.arenaflow.arena import (
    Judge, Match, Trajectory, advantages, compare, credited_options, knockout, survival_depths, used_options,
)
from tasks.loops.arenaflow.credit import (
    Skill, apply_usage, merge_experience, prior, recall, step_advantages, utility_delta,
)
from tasks.harness_loops.menu import OPTION_IDS, harness_document, option_text


@dataclass(frozen=True)
class ArenaSettings:
    group_size: int = 8
    top_k: int = 2
    prior_strength: float = 2.0
    beta: float = 1.0
    """Survival-depth credit; 0 = no step attribution."""
    min_obs: int = 4
    lr: float = 0.3
    utility_update: bool = True
    library: bool = True


@dataclass
class GroupRecord:
    """Everything one request's group produced (the tables' rows come from it)."""

    case_id: str
    template: str
    trajectories: list[Trajectory]
    tokens: list[int]
    matches: list[Match]
    scores: dict[str, int]
    advantages: dict[str, float]
    depths: dict[str, dict[int, int]]
    usage: list[tuple[str, str, bool, bool]]
    """(traj_id, skill_id, used, credited)."""
    prior: list[float]
    credited: dict[str, dict[str, int]]
    """traj_id -> option -> deepest survival depth of a key step it was used in."""
    step_adv: dict[str, list[float]] = field(default_factory=dict)
    champion: str = ""


def episode_trajectory(case: Case, choices: Sequence[int], traj_id: str) -> tuple[Trajectory, int]:
    """(the trajectory of ``case`` under the choices' harness, its tool calls)."""
    episode = run_episode(case.payload, parse_harness(harness_document(choices)))
    met = sum(c.met for c in episode.evaluation.conditions if not c.guard)
    t = Trajectory(traj_id, bool(episode.evaluation.success), met, episode.steps, tuple(choices))
    return t, episode.tool_calls


def play_group(policy: pol.SoftmaxPolicy, library: dict[str, Skill], case: Case, s: ArenaSettings,
               seed: int, round_: int, judge: Judge = compare) -> GroupRecord:
    """sample, execute and score one request's group; distill its step advantages."""
    template = case.payload["template"]
    skills = recall(library, template, s.top_k, s.utility_update) if s.library else []
    p = prior(skills, OPTION_IDS, s.prior_strength)
    if hasattr(judge, "for_request"):  # the LLM judge reads the request and the retrieved skills
        judge = judge.for_request(json.dumps(case.payload["params"], sort_keys=True),
                                  "\n".join(f"{sk.skill_id[:12]}: {sk.text}" for sk in skills) or "(none)")
    generator = torch.Generator().manual_seed(seed_for(seed, "arenaflow-group", round_, case.case_id))
    trajs, tokens = [], []
    for i, choices in enumerate(pol.sample_group(policy, template, p, s.group_size, generator)):
        t, calls = episode_trajectory(case, choices, derived_id(seed, round_, case.case_id, i))
        trajs.append(t)
        tokens.append(calls)
    tour = knockout(trajs, OPTION_IDS, judge)
    adv, credited = advantages(tour), credited_options(tour)
    record = GroupRecord(case.case_id, template, trajs, tokens, list(tour.matches), tour.scores, adv, survival_depths(tour), [],
                         p, credited, champion=tour.champion)
    for t in trajs:
        record.step_adv[t.traj_id] = step_advantages(adv[t.traj_id], t.choices, OPTION_IDS,
                                                     credited.get(t.traj_id, {}), tour.rounds, s.beta)
        fired = set(used_options(t, len(t.steps), OPTION_IDS))
        for sk in skills:
            record.usage.append((t.traj_id, sk.skill_id, sk.option in fired, sk.option in credited.get(t.traj_id, {})))
    return record


def train_round(policy: pol.SoftmaxPolicy, library: dict[str, Skill], cases: Sequence[Case], s: ArenaSettings,
                seed: int, round_: int, judge: Judge = compare) -> dict[str, Any]:
    """One round over ``cases`` (see the module docstring); mutates policy and library.
    The update is one step of a fresh Adam (so a resumed round needs only the weights)."""
    groups = [play_group(policy, library, c, s, seed, round_, judge) for c in cases]
    written, pruned = [], []
    if s.library:
        if s.utility_update:
            usages = [(sid, *utility_delta(g.advantages[tid], used, cred))
                      for g in groups for tid, sid, used, cred in g.usage]
            pruned = apply_usage(library, usages, s.min_obs)
        for g in groups:
            options = sorted(g.credited.get(g.champion, {}))
            written += merge_experience(library, g.template, options, {o: option_text(o) for o in options})
    rows = [(g.template, g.prior, t.choices, g.step_adv[t.traj_id]) for g in groups for t in g.trajectories]
    optimizer = torch.optim.Adam(policy.parameters(), lr=s.lr)
    step = pol.update(policy, optimizer, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                      [r[3] for r in rows])
    return {"groups": groups, "written": written, "pruned": pruned, "update": step}


def evaluate(policy: pol.SoftmaxPolicy, library: dict[str, Skill], cases: Sequence[Case],
             s: ArenaSettings) -> dict[str, float]:
    """Per-case success of the greedy policy with its retrieved skills' priors."""
    out = {}
    for case in cases:
        template = case.payload["template"]
        skills = recall(library, template, s.top_k, s.utility_update) if s.library else []
        choices = pol.greedy(policy, template, prior(skills, OPTION_IDS, s.prior_strength))
        out[case.case_id] = float(episode_trajectory(case, choices, case.case_id)[0].success)
    return out
