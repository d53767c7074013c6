"""Arms and the trajectory memory (pure).

An arm is a memory mode x a budget (``schemas.limbo.MODES``, ``BUDGETS``). The memory
holds at most ``capacity`` successful trajectories, oldest evicted first (the paper
leaves eviction open); only a success is admitted (the gate). An entry keeps the harness
items (rules and skills) the successful attempt ran with, its tool-call skeleton and its
token size. A memory version is the list of held entries; its id (the candidate id) is
the sha256 of its canonical JSON.

What a mode puts in the agent's context (its harness) and what that costs (tokens, a
chars / 4 proxy of the text the agent would read):

- ``none``: the seed harness; 0 tokens.
- ``direct``: the last entry's whole harness; its items plus its trajectory's tokens.
- ``compressed``: the last entry's rules only (its tool-call skeleton), no skills;
  the rules' and the skeleton's tokens.
- ``retrieval``: the ``k`` entries most similar to the request's template (Jaccard of
  the templates' default-plan tool sets; ties: most recent), their items merged; their
  items' and trajectories' tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from schemas.limbo import BUDGETS, MODES
from suites.toolsim.harness import LIMITS
from suites.toolsim.templates import get_template

SEED = {"version": 1, "rules": [], "skills": []}


@dataclass(frozen=True)
class Arm:
    id: str
    mode: str
    gen_len: int
    turns: int
    tool_calls: int


def arm_of(arm_id: str) -> Arm:
    mode, budget = arm_id.split("-")
    gen_len, turns, tool_calls = BUDGETS[budget]
    return Arm(arm_id, mode, gen_len, turns, tool_calls)


ARMS: tuple[Arm, ...] = tuple(arm_of(f"{m}-{b}") for m in MODES for b in BUDGETS)
"""Every arm, mode-major: none-lean, none-full, direct-lean, ..."""


def tokens_of(obj: Any) -> int:
    """The token proxy of a JSON-able object: characters / 4, rounded up."""
    return -(-len(json.dumps(obj, sort_keys=True)) // 4)


@dataclass(frozen=True)
class Entry:
    entry: str
    """Content id of (template, items, skeleton, traj_ref)."""
    template: str
    t_added: int
    traj_ref: str
    items: Mapping[str, Any]
    """{"rules": [...], "skills": [...]} the successful attempt ran with."""
    skeleton: tuple[str, ...]
    """The tool names of its ok tool calls, in order."""
    traj_tokens: int

    def as_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "template": self.template, "t_added": self.t_added, "traj_ref": self.traj_ref,
                "items": json.loads(json.dumps(self.items)), "skeleton": list(self.skeleton),
                "traj_tokens": self.traj_tokens}


def make_entry(template: str, t: int, traj_ref: str, harness: Mapping[str, Any],
               steps: Sequence[Mapping[str, Any]]) -> Entry:
    items = {"rules": list(harness.get("rules", [])), "skills": list(harness.get("skills", []))}
    skeleton = tuple(s["name"] for s in steps if s["kind"] == "tool_call" and s["ok"])
    body = {"template": template, "items": items, "skeleton": list(skeleton), "traj_ref": traj_ref}
    return Entry(content_id(json.dumps(body, sort_keys=True)), template, t, traj_ref, items, skeleton,
                 sum(tokens_of([s["args_json"], s["result_json"]]) for s in steps))


def entry_of(raw: Mapping[str, Any]) -> Entry:
    return Entry(raw["entry"], raw["template"], raw["t_added"], raw["traj_ref"], dict(raw["items"]),
                 tuple(raw["skeleton"]), raw["traj_tokens"])


def admit(memory: Sequence[Entry], entry: Entry, capacity: int) -> tuple[list[Entry], list[Entry]]:
    """(new memory, evicted entries): ``entry`` appended, the oldest evicted past capacity."""
    held = [*memory, entry]
    return held[max(0, len(held) - capacity):], held[:max(0, len(held) - capacity)]


def memory_bytes(memory: Sequence[Entry]) -> bytes:
    return json.dumps({"entries": [e.as_json() for e in memory]}, sort_keys=True).encode()


def memory_id(memory: Sequence[Entry]) -> str:
    return content_id(memory_bytes(memory))


def memory_of(data: bytes) -> list[Entry]:
    return [entry_of(raw) for raw in json.loads(data)["entries"]]


def plan_tools(template: str) -> frozenset[str]:
    return frozenset(step["call"] for step in get_template(template).plan if "call" in step)


def similarity(a: str, b: str) -> float:
    """Jaccard of two templates' default-plan tool sets (1.0 for the same template)."""
    x, y = plan_tools(a), plan_tools(b)
    return 1.0 if a == b else len(x & y) / len(x | y) if x | y else 0.0


def retrieve(memory: Sequence[Entry], template: str, k: int) -> list[Entry]:
    order = sorted(range(len(memory)), key=lambda i: (-similarity(memory[i].template, template), -i))
    return [memory[i] for i in order[:k]]


def _merge(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The union of several entries' rules and skills (first occurrence kept; a skill per
    template), capped at the harness limits."""
    rules, skills, seen, templates = [], [], set(), set()
    for group in items:
        for rule in group.get("rules", []):
            body = json.dumps({k: v for k, v in rule.items() if k not in ("id", "note")}, sort_keys=True)
            if body not in seen and rule.get("id") not in seen and len(rules) < LIMITS["rules"]:
                seen.update((body, rule.get("id")))
                rules.append(dict(rule))
        for skill in group.get("skills", []):
            owner = json.dumps(skill.get("trigger"), sort_keys=True)
            if owner not in templates and len(skills) < LIMITS["skills"]:
                templates.add(owner)
                skills.append(dict(skill))
    return {**SEED, "rules": json.loads(json.dumps(rules)), "skills": json.loads(json.dumps(skills))}


def context(mode: str, memory: Sequence[Entry], template: str, k: int) -> tuple[dict[str, Any], int]:
    """(harness, context tokens) the mode gives the agent for a request (module docstring)."""
    if mode == "none" or not memory:
        return dict(SEED), 0
    if mode == "direct":
        last = memory[-1]
        return _merge([last.items]), tokens_of(last.items) + last.traj_tokens
    if mode == "compressed":
        last = memory[-1]
        rules = {"rules": last.items.get("rules", [])}
        return _merge([rules]), tokens_of(rules) + tokens_of(list(last.skeleton))
    if mode == "retrieval":
        chosen = retrieve(memory, template, k)
        return _merge([e.items for e in chosen]), sum(tokens_of(e.items) + e.traj_tokens for e in chosen)
    raise ValueError(f"unknown memory mode {mode!r}; known: {', '.join(MODES)}")
