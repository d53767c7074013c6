"""MASS's inner-loop artifact on toolsim: a multi-role workflow. Pure.

A workflow is a planner and an ordered list of workers. The planner splits the request
into subtasks and returns them under a **return-field contract** (the fields it fills
in: ``error_code``, ``order_pages``, ``order_state``); each worker owns one harness rule
of the shared menu (``tasks.harness_loops.menu``) and can act only when the contract
carries the field it needs (a retrier needs the failed call's ``error_code``, a pager the
``order_pages``, a refunder the ``order_state``). A worker whose field is missing is
called but cannot act (it delegates nothing). The workflow compiles to one toolsim
harness: the rules of the acting workers, in the workflow's call order.

Mutation operators under structural constraints (the paper's are not specified; these
are the spec's [impl] ones): add a role, drop a role, reorder two adjacent roles, add or
drop a return field. Constraints: at most ``max_roles`` workers, each at most once,
fields from ``FIELDS`` only. The seed is the single-agent workflow (no workers, an empty
contract: the agent's default plans)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Sequence

from schemas.ids import content_id
from tasks.harness_loops.menu import OPTION_IDS, OPTIONS

FIELDS: tuple[str, ...] = ("error_code", "order_pages", "order_state")


@dataclass(frozen=True)
class Worker:
    role: str
    option: str
    """The menu option (harness rule) this worker applies."""
    needs: str
    """The return field the worker needs from the planner to act."""


WORKERS: dict[str, Worker] = {w.role: w for w in (
    Worker("retrier", "retry-transient", "error_code"),
    Worker("waiter", "retry-rate-limited", "error_code"),
    Worker("pager", "paginate-orders", "order_pages"),
    Worker("refunder", "cancel-before-refund", "order_state"),
    Worker("skimmer", "one-page", "order_pages"),
    Worker("persister", "retry-not-found", "error_code"),
)}
OPERATORS: tuple[str, ...] = ("add_role", "drop_role", "reorder", "add_field", "drop_field")


@dataclass(frozen=True)
class Workflow:
    workers: tuple[str, ...] = ()
    """Worker roles in call order (after the planner)."""
    contract: tuple[str, ...] = ()
    """The planner's return fields (sorted)."""

    def __post_init__(self) -> None:
        unknown = [w for w in self.workers if w not in WORKERS] + [f for f in self.contract if f not in FIELDS]
        if unknown or len(set(self.workers)) != len(self.workers):
            raise ValueError(f"mass: invalid workflow (unknown or repeated: {unknown or list(self.workers)})")
        object.__setattr__(self, "contract", tuple(sorted(set(self.contract))))

    def spec_json(self) -> str:
        return json.dumps({"planner": {"returns": list(self.contract)}, "workers": list(self.workers)},
                          sort_keys=True)

    @property
    def wf_id(self) -> str:
        return content_id(self.spec_json())


def from_spec(spec_json: str) -> Workflow:
    spec = json.loads(spec_json)
    return Workflow(tuple(spec["workers"]), tuple(spec["planner"]["returns"]))


def acting(wf: Workflow) -> tuple[str, ...]:
    """The workers whose needed field the contract carries, in call order."""
    return tuple(w for w in wf.workers if WORKERS[w].needs in wf.contract)


def decisions(wf: Workflow) -> tuple[int, ...]:
    """The workflow's rule decisions in menu order (1 = some acting worker applies it)."""
    on = {WORKERS[w].option for w in acting(wf)}
    return tuple(int(o in on) for o in OPTION_IDS)


def harness_of(wf: Workflow) -> dict[str, Any]:
    """The toolsim harness the workflow compiles to: acting workers' rules in call order."""
    rules = {o.option_id: o.rule for o in OPTIONS}
    return {"version": 1, "skills": [],
            "rules": [{"id": WORKERS[w].option, **rules[WORKERS[w].option]} for w in acting(wf)]}


def applicable(wf: Workflow, op: str, max_roles: int) -> bool:
    return {"add_role": len(wf.workers) < min(max_roles, len(WORKERS)), "drop_role": bool(wf.workers),
            "reorder": len(wf.workers) >= 2, "add_field": len(wf.contract) < len(FIELDS),
            "drop_field": bool(wf.contract)}[op]


def mutate(wf: Workflow, op: str, rng: random.Random) -> Workflow:
    """One operator applied at a seeded position (the caller checks ``applicable``)."""
    workers, contract = list(wf.workers), list(wf.contract)
    if op == "add_role":
        workers.insert(rng.randrange(len(workers) + 1), rng.choice([w for w in WORKERS if w not in workers]))
    elif op == "drop_role":
        workers.pop(rng.randrange(len(workers)))
    elif op == "reorder":
        i = rng.randrange(len(workers) - 1)
        workers[i], workers[i + 1] = workers[i + 1], workers[i]
    elif op == "add_field":
        contract.append(rng.choice([f for f in FIELDS if f not in contract]))
    elif op == "drop_field":
        contract.remove(rng.choice(contract))
    else:
        raise ValueError(f"mass: unknown mutation operator {op!r}; known: {', '.join(OPERATORS)}")
    return Workflow(tuple(workers), tuple(contract))


def children(parent: Workflow, n: int, max_roles: int, rng: random.Random,
             operators: Sequence[str] = OPERATORS) -> list[tuple[str, Workflow]]:
    """``n`` (operator, child) pairs, each one applicable operator away from ``parent``."""
    out = []
    for _ in range(n):
        ops = [op for op in operators if applicable(parent, op, max_roles)]
        op = rng.choice(ops)
        out.append((op, mutate(parent, op, rng)))
    return out
