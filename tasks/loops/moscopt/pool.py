"""MOSCOPT's state on toolsim: a pool of N skills (rule bundles), the gating skill G
that loads K of them per task, and the per-skill success statistics. Pure.

A *skill* is a rule bundle: ``{"name", "summary", "rules": [...], "skills": [...]}``
whose ``rules`` and ``skills`` are toolsim harness items (``suites/toolsim/harness.py``).
Its id is the sha256 of its canonical JSON, so equal bundles are one skill.
Only the loaded skills' full text enters the agent: the episode's harness is the union
of the K loaded bundles (``compose``), so loading an irrelevant bundle lets its rules
fire where they do harm and, under toolsim version 2, each loaded plan skill for another
template costs ``SKILL_CONTEXT_STEPS`` of the step budget: over-loading is costly.

G is a table template -> skill id -> score (the paper's selection prompt; the offline
stand-in the spec names); ``select`` loads the K best-scored skills of the pool (ties:
the lower id), scores of ids no longer in the pool are ignored. A new skill that
replaces a parent inherits the parent's scores (``replace_skill``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from schemas.ids import content_id

Bundle = dict[str, Any]
Gating = dict[str, dict[str, float]]
"""template -> skill id -> score."""

THEMES = ("retry", "identity", "pagination", "refund", "misc")
"""The seed pool's bundles, by what their rules touch (the spec's refund, retry,
pagination, identity bundles, plus the rest)."""

IDENTITY_TOOLS = ("find_user_by_email", "search_users", "get_user")
REFUND_TOOLS = ("refund_order", "cancel_order")


def bundle_id(bundle: Mapping[str, Any]) -> str:
    """The sha256 of the bundle's canonical JSON: its content id."""
    return content_id(json.dumps(bundle, sort_keys=True))


def theme_of(rule: Mapping[str, Any]) -> str:
    """The seed bundle a catalogue rule goes to."""
    trigger, action = rule["trigger"], rule["action"]
    tool = next((trigger[k] for k in ("on_error", "before", "after", "on_result") if k in trigger and k != "on_error"),
                trigger.get("tool", "*"))
    if "paginate" in action:
        return "pagination"
    if tool in IDENTITY_TOOLS:
        return "identity"
    if tool in REFUND_TOOLS or action.get("call_first", {}).get("tool") in REFUND_TOOLS:
        return "refund"
    if "retry" in action:
        return "retry"
    return "misc"


def seed_pool(rules: Sequence[Mapping[str, Any]], plans: Sequence[Mapping[str, Any]]) -> list[Bundle]:
    """The initial pool: catalogue ``rules`` and plan ``skills`` grouped by theme (a plan
    skill goes with ``refund`` when its template refunds, else ``misc``); empty themes
    are left out. Order: ``THEMES``."""
    groups: dict[str, Bundle] = {t: {"name": t, "summary": f"{t} rules", "rules": [], "skills": []} for t in THEMES}
    for rule in rules:
        groups[theme_of(rule)]["rules"].append(copy.deepcopy(dict(rule)))
    for plan in plans:
        groups["refund" if "refund" in plan["trigger"]["template"] else "misc"]["skills"].append(copy.deepcopy(dict(plan)))
    return [summarised(b) for b in groups.values() if b["rules"] or b["skills"]]


def summarised(bundle: Mapping[str, Any]) -> Bundle:
    """The bundle with its summary (what G reads) recomputed from its items."""
    out = copy.deepcopy(dict(bundle))
    ids = [r.get("id", "rule") for r in out["rules"]] + [f"plan:{s['trigger']['template']}" for s in out["skills"]]
    out["summary"] = f"{out['name']}: " + (", ".join(ids) if ids else "empty")
    return out


def compose(bundles: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The harness document of the loaded bundles: their rules in load order (a rule
    body already present is not repeated) and the first plan skill per template."""
    rules, skills, bodies, templates = [], [], set(), set()
    for bundle in bundles:
        for rule in bundle["rules"]:
            body = json.dumps({k: v for k, v in rule.items() if k != "id"}, sort_keys=True)
            if body not in bodies:
                bodies.add(body)
                rules.append({**copy.deepcopy(rule), "id": f"{bundle['name']}.{rule.get('id', len(rules))}"})
        for skill in bundle["skills"]:
            if skill["trigger"]["template"] not in templates:
                templates.add(skill["trigger"]["template"])
                skills.append({**copy.deepcopy(skill), "name": f"{bundle['name']}-{skill['name']}"[:120]})
    return {"version": 1, "rules": rules, "skills": skills}


def select(gating: Mapping[str, Mapping[str, float]], template: str, pool: Sequence[str], k: int) -> list[str]:
    """The K skill ids G loads for a task of ``template``: the best-scored of the pool
    (a skill G has not scored scores 0; ties: the lower id)."""
    scores = gating.get(template, {})
    return sorted(pool, key=lambda s: (-scores.get(s, 0.0), s))[:k]


@dataclass(frozen=True)
class State:
    """The artifact MOSCOPT improves: the pool (id -> bundle, in order) and G."""

    pool: dict[str, Bundle]
    gating: Gating = field(default_factory=dict)

    @classmethod
    def of(cls, bundles: Sequence[Mapping[str, Any]], gating: Gating | None = None) -> "State":
        return cls({bundle_id(b): copy.deepcopy(dict(b)) for b in bundles}, copy.deepcopy(gating or {}))

    def loaded(self, template: str, k: int) -> list[str]:
        return select(self.gating, template, list(self.pool), k)

    def document(self, template: str, k: int) -> dict[str, Any]:
        """The harness the agent runs a task of ``template`` with."""
        return compose([self.pool[s] for s in self.loaded(template, k)])

    def gating_id(self) -> str:
        """G's content id (its version): scores of skills in the pool only."""
        live = {t: {s: v for s, v in sorted(row.items()) if s in self.pool} for t, row in sorted(self.gating.items())}
        return content_id(json.dumps(live, sort_keys=True))

    def state_id(self) -> str:
        return content_id(json.dumps({"pool": sorted(self.pool), "gating": self.gating_id()}))


def replace_skill(state: State, old: str | None, bundle: Mapping[str, Any]) -> State:
    """The state with ``bundle`` in place of ``old`` (appended when ``old`` is None or
    gone); the new skill inherits ``old``'s G scores."""
    new = bundle_id(bundle)
    pool = {(new if s == old else s): (copy.deepcopy(dict(bundle)) if s == old else b) for s, b in state.pool.items()}
    pool.setdefault(new, copy.deepcopy(dict(bundle)))
    gating = copy.deepcopy(state.gating)
    if old is not None:
        for row in gating.values():
            if old in row:
                row[new] = row[old]
    return State(pool, gating)


def drop_skill(state: State, skill: str) -> State:
    return State({s: b for s, b in state.pool.items() if s != skill}, copy.deepcopy(state.gating))


def with_score(state: State, template: str, skill: str, score: float) -> State:
    gating = copy.deepcopy(state.gating)
    gating.setdefault(template, {})[skill] = float(score)
    return State(copy.deepcopy(state.pool), gating)


def update_stats(stats: Mapping[str, tuple[int, int]], loaded: Sequence[str], success: bool) -> dict[str, tuple[int, int]]:
    """(n_active, n_success) per skill after one episode: every loaded skill shares its
    outcome (the paper's ambiguous credit: co-occurrence, not causation)."""
    out = dict(stats)
    for skill in loaded:
        n, s = out.get(skill, (0, 0))
        out[skill] = (n + 1, s + int(success))
    return out
