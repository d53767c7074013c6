"""Failure modes (pure): every imperfect trajectory is abstracted into a reusable
failure mode, a clustered signature (tool, event, error, missing action), and stored in
the failure memory with the trajectories that support it.

The signature drops everything case-specific (ids, amounts, the customer): two
trajectories of different instances, even of different templates, that fail at the same
tool with the same error and miss the same goal condition are one mode ("list_orders
ends without a next page -> latest_cancelled missing", not one order's answer).

- tool: the tool of the step that ended the episode (``failure_point``), else ``plan``;
- event: ``injected`` (a fault the backend injected), ``error`` (a real tool error) or
  ``ended`` (the plan ran to its end and the goal is not met);
- error: the error code, ``broken:<guard>`` when a guard broke, else ``none``;
- missing: the first unmet goal condition (the action the agent did not take).

A mode's id is the sha256 of its canonical signature; the memory's version id is the
sha256 of its canonical JSON (a candidate like every other version).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.proposers.rule_evidence import Trace, error_of, failure_point

Signature = tuple[str, str, str, str]
"""(tool, event, error, missing)."""


@dataclass(frozen=True)
class FailureMode:
    mode_id: str
    signature: Signature
    desc: str
    templates: tuple[str, ...]
    """Templates whose trajectories showed it (the generators' sources)."""
    support: tuple[str, ...]
    """Trajectory ids, in the order they were abstracted."""

    def as_json(self) -> dict[str, Any]:
        return {"mode_id": self.mode_id, "signature": list(self.signature), "desc": self.desc,
                "templates": list(self.templates), "support": list(self.support)}


def mode_of(raw: Mapping[str, Any]) -> FailureMode:
    return FailureMode(raw["mode_id"], tuple(raw["signature"]), raw["desc"], tuple(raw["templates"]),
                       tuple(raw["support"]))


def signature(trace: Trace) -> Signature | None:
    """The trajectory's failure signature (module docstring); None when it is perfect."""
    if trace.success:
        return None
    missing = trace.unmet[0] if trace.unmet else "none"
    point = failure_point(trace)
    if point is not None:
        step = trace.steps[point]
        error = error_of(step)
        event = "injected" if error and error.get("injected") else "error" if error else "ended"
        return (str(step["name"]), event, error["code"] if error else "none", missing)
    return ("plan", "ended", f"broken:{trace.broken[0]}" if trace.broken else "none", missing)


def mode_id(sig: Signature) -> str:
    return content_id(json.dumps(list(sig)))


def describe(sig: Signature) -> str:
    tool, event, error, missing = sig
    what = {"injected": f"an injected {error} fault", "error": f"a {error} error"}.get(event, "")
    head = f"{tool} ends the episode with {what}" if what else (
        f"the plan ends with {error.replace('broken:', 'the guard ')} broken" if error != "none" else
        "the plan ends")
    return f"{head}; missing: {missing}"


def abstract(memory: Mapping[str, FailureMode], imperfect: Sequence[tuple[str, Trace]]) -> dict[str, FailureMode]:
    """The memory after abstracting ``(traj_id, trace)`` pairs: a trajectory joins the
    support of its mode (a new mode when the signature is new). A trajectory already in
    its mode's support adds nothing (abstraction is idempotent)."""
    out = dict(memory)
    for traj_id, trace in imperfect:
        sig = signature(trace)
        if sig is None:
            continue
        mid = mode_id(sig)
        old = out.get(mid) or FailureMode(mid, sig, describe(sig), (), ())
        if traj_id in old.support:
            continue
        templates = tuple(sorted({*old.templates, trace.template}))
        out[mid] = FailureMode(mid, sig, old.desc, templates, (*old.support, traj_id))
    return out


def memory_bytes(memory: Mapping[str, FailureMode]) -> bytes:
    return json.dumps({"modes": [memory[k].as_json() for k in sorted(memory)]}, sort_keys=True).encode()


def memory_of(blob: bytes) -> dict[str, FailureMode]:
    return {raw["mode_id"]: mode_of(raw) for raw in json.loads(blob)["modes"]}


def ranked(memory: Mapping[str, FailureMode], top: int) -> list[FailureMode]:
    """The ``top`` modes with the most support (ties by mode id): synthesis targets."""
    return sorted(memory.values(), key=lambda m: (-len(m.support), m.mode_id))[:top]
