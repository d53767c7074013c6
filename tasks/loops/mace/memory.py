"""MemGoG, MACE's persisted memory (pure): functional units, their relations and the
presentation-choice statistics; one memory version is one JSON document whose sha256 is
its candidate id.

A *unit* is a rule mined from past logs (``mine_units``): the rule proposer's candidate
edits of the empty harness, derived from failed episodes. Its condition is the trigger
(which tool, which event), its action the harness item, its output the consequence the
proposer's rationale states. A unit belongs to one *role* of the pipeline
intake -> lookup -> action -> verify (``role_of``) and is relevant to the templates of
the episodes it was mined from (the information need).

Relations are ``support`` / ``conflict`` weights of unit pairs injected together; arm
statistics are Beta(alpha, beta) counts keyed ``joint|role|set|form`` (one arm per (unit
set, form) pair), ``set|role|set`` and ``form|role|form`` (the factorised bandits).

Deviations: the units come from the rule proposer over toolsim traces, not an LLM; a
unit's subgraph of condition/action/output is flattened to three fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rules import RuleProposer

ROLES = ("intake", "lookup", "action", "verify")
"""The multi-agent pipeline, in order (a role's stage is its index)."""
ROLE_TOOLS = {
    "intake": ("find_user_by_email", "get_user", "search_users"),
    "lookup": ("list_orders", "get_order", "get_product", "search_products", "check_inventory"),
}
EMPTY_HARNESS = {"version": 1, "rules": [], "skills": []}
PRIOR_UTILITY = 0.5


@dataclass(frozen=True)
class Unit:
    unit_id: str
    role: str
    kind: str
    """"rule" or "skill"."""
    item: Mapping[str, Any]
    """The harness item (a rule or a skill) as mined."""
    templates: tuple[str, ...]
    output: str

    @property
    def condition(self) -> str:
        return json.dumps(dict(self.item["trigger"]), sort_keys=True)

    def as_json(self) -> dict[str, Any]:
        item = json.loads(json.dumps(self.item))
        return {"unit_id": self.unit_id, "role": self.role, "kind": self.kind, "item": item,
                "templates": list(self.templates), "output": self.output}


def unit_of(raw: Mapping[str, Any]) -> Unit:
    return Unit(raw["unit_id"], raw["role"], raw["kind"], dict(raw["item"]), tuple(raw["templates"]), raw["output"])


def role_of(kind: str, item: Mapping[str, Any]) -> str:
    """The role a unit serves: a skill with checks or an ``on_result`` rule verifies; a
    rule on an intake or lookup tool serves that role; everything else acts."""
    if kind == "skill":
        return "verify" if item.get("checks") else "action"
    trigger = item["trigger"]
    if "on_result" in trigger:
        return "verify"
    tool = trigger.get("before") or trigger.get("after") or trigger.get("tool")
    return next((role for role, tools in ROLE_TOOLS.items() if tool in tools), "action")


def item_body(item: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "note", "name")}, sort_keys=True)


def mine_units(traces: Sequence[Trace]) -> list[Unit]:
    """Every rule or skill the rule proposer derives from the failed ``traces`` against the
    empty harness, one unit per distinct item (id = sha256 of what it does), its templates
    those of the traces that motivated it."""
    evidence = Evidence.of(traces)
    if not evidence.failures:
        return []
    by_case = {t.case_id: t.template for t in traces}
    units: dict[str, Unit] = {}
    for cand in RuleProposer().candidates(evidence, EMPTY_HARNESS):
        if cand.edit not in ("add_rule", "put_skill"):
            continue
        kind = "rule" if cand.edit == "add_rule" else "skill"
        uid = content_id(item_body(cand.item))
        item = {**cand.item, "id": f"u-{uid[:10]}"} if kind == "rule" else {**cand.item, "name": f"u-{uid[:10]}"}
        known = set(units[uid].templates) if uid in units else set()
        templates = tuple(sorted({by_case[c] for c in cand.triggers} | known))
        units[uid] = Unit(uid, role_of(kind, item), kind, item, templates, cand.rationale[:300])
    return sorted(units.values(), key=lambda u: u.unit_id)


@dataclass
class Memory:
    """One MemGoG version (mutable only inside ``update``'s copy)."""

    units: dict[str, Unit] = field(default_factory=dict)
    utility: dict[str, float] = field(default_factory=dict)
    n_obs: dict[str, int] = field(default_factory=dict)
    relations: dict[str, float] = field(default_factory=dict)
    """``"src|dst|type"`` -> weight (src < dst; type ``support`` or ``conflict``)."""
    arms: dict[str, list[float]] = field(default_factory=dict)
    """Arm key -> [alpha, beta] (successes and failures seen, without the prior)."""

    def doc(self) -> dict[str, Any]:
        return {"units": [u.as_json() for u in sorted(self.units.values(), key=lambda u: u.unit_id)],
                "utility": dict(sorted(self.utility.items())), "n_obs": dict(sorted(self.n_obs.items())),
                "relations": dict(sorted(self.relations.items())), "arms": dict(sorted(self.arms.items()))}

    def to_bytes(self) -> bytes:
        return json.dumps(self.doc(), sort_keys=True).encode()

    @property
    def memory_id(self) -> str:
        """The version's content id (= the sha256 of its stored blob)."""
        return content_id(self.to_bytes())

    def copy(self) -> "Memory":
        return memory_of(self.doc())


def memory_of(doc: Mapping[str, Any]) -> Memory:
    return Memory({u["unit_id"]: unit_of(u) for u in doc["units"]}, dict(doc["utility"]),
                  {k: int(v) for k, v in doc["n_obs"].items()}, dict(doc["relations"]),
                  {k: list(v) for k, v in doc["arms"].items()})


def add_units(memory: Memory, units: Sequence[Unit], max_units: int) -> Memory:
    """A copy with the new ``units`` (at the prior utility) while it holds fewer than
    ``max_units``; a known unit widens its templates."""
    out = memory.copy()
    for unit in units:
        known = out.units.get(unit.unit_id)
        if known is not None:
            merged = tuple(sorted(set(known.templates) | set(unit.templates)))
            out.units[unit.unit_id] = Unit(known.unit_id, known.role, known.kind, known.item, merged, known.output)
        elif len(out.units) < max_units:
            out.units[unit.unit_id] = unit
            out.utility[unit.unit_id] = PRIOR_UTILITY
            out.n_obs[unit.unit_id] = 0
    return out


def pair_key(a: str, b: str, kind: str) -> str:
    src, dst = sorted((a, b))
    return f"{src}|{dst}|{kind}"
