"""The protocol's arms and what one run of an arm records. An arm is a harness file of
``harnesses/`` (toolsim) or ``harnesses/codemidas/``: its document (toolsim: the harness
rules, retries and paging: truncation; codemidas: what feedback an attempt returns), the
step (attempt) limit the harness gives the agent, and whether the usage it reports counts
the cached prompt in its input tokens (SDKs differ; the cost audit must find out). Pure,
apart from reading the packaged files."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Mapping

from suites.toolsim.seeding import derive_seed

STATUS_ENDED_SELF = ("completed", "gave_up")
"""Episode statuses where the agent ended the run itself (the plan finished or gave up)."""


@dataclass(frozen=True)
class Arm:
    name: str
    description: str
    max_steps: int
    cache_included: bool
    document: dict[str, Any]


def _folder(suite: str):
    folder = resources.files(__package__) / "harnesses"
    return folder if suite == "toolsim" else folder / suite


def arm_names(suite: str = "toolsim") -> list[str]:
    """The harness files shipped with the loop for ``suite``."""
    return sorted(p.name.removesuffix(".json") for p in _folder(suite).iterdir() if p.name.endswith(".json"))


def load_arm(name: str, suite: str = "toolsim") -> Arm:
    """The arm ``name`` of ``suite``; an unknown name is refused with the known ones."""
    if name not in arm_names(suite):
        where = "" if suite == "toolsim" else f" on {suite}"
        raise ValueError(f"no harness {name!r} for harness_or_model{where}; known: {', '.join(arm_names(suite))}")
    raw = json.loads((_folder(suite) / f"{name}.json").read_text())
    return Arm(name, raw["description"], int(raw["max_steps"]), bool(raw["cache_included"]), raw["document"])


def noise_seed(case_noise_seed: int, seed_index: int) -> int:
    """The noise seed of a task's ``seed_index``-th run: seed 0 is the case's own (the
    suite's standard schedule), later ones are derived; the same for both arms (paired)."""
    return case_noise_seed if seed_index == 0 else derive_seed(case_noise_seed, "harness_or_model", seed_index)


def payload_for(payload: Mapping[str, Any], arm: Arm, seed_index: int) -> dict[str, Any]:
    """The case payload one run simulates: the task and its noise, the arm's step limit."""
    return {**payload, "noise_seed": noise_seed(payload["noise_seed"], seed_index), "max_steps": arm.max_steps}


def usage_missing(run_seed: int, arm: str, case_id: str, seed_index: int, rate: float) -> bool:
    """Whether this run's usage record is dropped on purpose (seeded, so reruns agree)."""
    return derive_seed(run_seed, "missing_usage", arm, case_id, seed_index) % 10_000 < round(rate * 10_000)


def tokens(text: str) -> int:
    """The usage proxy's token count of a text: 4 characters make a token."""
    return math.ceil(len(text) / 4)


def usage_of(steps: Any, arm: Arm) -> dict[str, float]:
    """Usage as the arm's harness reports it, from the trajectory: each tool call or check
    is a turn that sends the harness document (cached prompt), reads the tool's result
    (input) and writes the call (output, 4 tokens of framing); 4 characters make a token.
    With ``cache_included`` the reported input counts the cached prompt too. A proxy for
    billed tokens: no model is billed here."""
    prompt = tokens(json.dumps(arm.document, sort_keys=True))
    turns = [s for s in steps if s["kind"] in ("tool_call", "check")]
    fresh = sum(tokens(s["result_json"]) for s in turns)
    cached = prompt * len(turns)
    return {
        "in_tok": float(fresh + cached if arm.cache_included else fresh),
        "cached_tok": float(cached),
        "out_tok": float(sum(tokens(s["args_json"]) + 4 for s in turns)),
    }


def run_metrics(status: str, success: bool, tool_calls: int) -> dict[str, float]:
    """The counts kept apart: solved, ended by the agent itself, stopped by the limit."""
    return {
        "success": float(success),
        "ended_self": float(status in STATUS_ENDED_SELF),
        "hit_limit": float(status == "step_limit"),
        "tool_calls": float(tool_calls),
    }
