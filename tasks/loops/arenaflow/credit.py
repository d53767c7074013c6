"""ArenaFlow's distill and gate rules. Pure.

- ``step_advantages``: in a positive-advantage trajectory an option decision credited at
  key steps gets ``A * (1 + beta * depth / rounds)``: extra credit scaled by survival
  depth; every other decision gets the trajectory's A. A non-positive A is never changed
  by local labels (never flipped to positive). ``beta = 0`` is the "no step attribution"
  ablation (plain tournament-ranked group advantages, ArenaRL-like).
- ``utility_delta``: a skill's utility accumulates, per trajectory that retrieved it,
  A when A > 0 and the skill was credited at a key step, A when A < 0 and its rule
  fired; each such usage is one observation. A skill still negative after ``min_obs``
  observations is pruned (the paper leaves the count unspecified; a parameter here).
- ``merge_experience``: the champion's credited options become skills of the request's
  template: a new skill (version 1); an active skill with the same template and option
  (the semantically similar one) already holds that experience and is kept as it is; a
  pruned one is replaced by a new version with fresh utility.

Skills are recalled by template (the semantic match offline) and selected by utility,
``top_k`` of them (the paper: too many hurt)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from schemas.ids import content_id


@dataclass(frozen=True)
class Skill:
    skill_id: str
    ver: int
    template: str
    option: str
    text: str
    utility: float = 0.0
    n_obs: int = 0
    active: bool = True


def skill_id(template: str, option: str) -> str:
    """sha256 of the skill's key content (template, option): the same across versions."""
    return content_id(json.dumps({"template": template, "option": option}, sort_keys=True))


def step_advantages(advantage: float, choices: Sequence[int], option_ids: Sequence[str],
                    credited: Mapping[str, int], rounds: int, beta: float) -> list[float]:
    """Per-decision advantages of one trajectory (see the module docstring)."""
    if advantage <= 0 or beta == 0 or rounds == 0:
        return [advantage] * len(choices)
    return [advantage * (1.0 + beta * credited.get(o, 0) / rounds) if on else advantage
            for o, on in zip(option_ids, choices)]


def recall(library: Mapping[str, Skill], template: str, top_k: int, by_utility: bool) -> list[Skill]:
    """Active skills of ``template``, the ``top_k`` of highest utility (ties by id); by id
    alone when utilities are not used."""
    pool = [s for s in library.values() if s.active and s.template == template]
    pool.sort(key=(lambda s: (-s.utility, s.skill_id)) if by_utility else (lambda s: s.skill_id))
    return pool[:top_k]


def prior(skills: Sequence[Skill], option_ids: Sequence[str], strength: float) -> list[float]:
    """The on-logit prior each option gets from the retrieved skills."""
    on = {s.option for s in skills}
    return [strength if o in on else 0.0 for o in option_ids]


def utility_delta(advantage: float, used: bool, credited: bool) -> tuple[float, int]:
    """(utility change, observations) of one retrieved skill in one trajectory."""
    if advantage > 0 and credited:
        return advantage, 1
    if advantage < 0 and used:
        return advantage, 1
    return 0.0, 0


def apply_usage(library: dict[str, Skill], usages: Sequence[tuple[str, float, int]], min_obs: int) -> list[str]:
    """Add each (skill_id, delta, n) to the library and prune skills still negative after
    ``min_obs`` observations; returns the ids pruned now."""
    for sid, delta, n in usages:
        s = library[sid]
        library[sid] = replace(s, utility=s.utility + delta, n_obs=s.n_obs + n)
    pruned = [sid for sid, s in library.items() if s.active and s.n_obs >= min_obs and s.utility < 0]
    for sid in pruned:
        library[sid] = replace(library[sid], active=False, ver=library[sid].ver + 1)
    return pruned


def merge_experience(library: dict[str, Skill], template: str, options: Sequence[str],
                     texts: Mapping[str, str]) -> list[Skill]:
    """The champion's credited options as skills of ``template``; returns the written versions."""
    written = []
    for o in options:
        sid = skill_id(template, o)
        text = f"{template}: {texts[o]}"
        old = library.get(sid)
        if old is None:
            new = Skill(sid, 1, template, o, text)
        elif old.active:
            continue  # the same experience is already in the active library
        else:
            new = replace(old, ver=old.ver + 1, text=text, active=True, utility=0.0, n_obs=0)
        library[sid] = new
        written.append(new)
    return written
