"""toolsim: a simulated customer-service backend for harness, rule and skill loops
(Self-Healing Harness, Growing Harness, MedRSI, Designer-RSI, Luck Is Not Skill).

Candidate. A Python program whose ``harness()`` (no arguments) returns a harness
document (``harness.py``): a mapping, or YAML/JSON text. The runner returns that
document as ``{"harness": ...}`` and nothing else. The program can compute the document
(that is its "harness code"), but it never sees a case: ``harness()`` is called without
the payload, so one candidate is one case-independent harness.

Scoring (why this design). The simulation is ours and deterministic, and only the
harness comes from the candidate, so the trusted scorer re-runs the whole episode in
the parent from the returned document: it rebuilds the case's world from its seed, runs
the agent with the case's fault schedule, and judges the backend's final state. Nothing
else in the output is read: a candidate that claims ``"success": 1`` or returns a
forged trajectory gains nothing. An output that is not a valid harness scores the floor
with the parse error (which names the rule or skill and field) as the reason.

Metrics per case: ``success`` (true, 0/1, primary), ``observed_success`` (after the
grading flip), ``progress`` (partial credit in [0, 1]), ``tool_calls`` (Growing
Harness's cost analog) and ``cost`` (the template's severity-weighted failure cost,
MedRSI's clinical-cost analog; see ``templates.py``).

Cases. ``instances_per_template`` instances of each of the 8 templates; instance ``i``
is in split ``SPLIT_CYCLE[i % 20]``: 20 instances give 8 train / 3 select / 3 protected
/ 3 holdout / 3 test, and any 5 consecutive instances cover every split. A payload
holds the template, the instance index, ``world_seed``, the customer's request
(``params``: what the agent is given), ``noise_seed``, ``fault_rate``, ``flip_rate`` and
``max_steps``, and ``"version": 2`` under suite version 2 (side effects: non-idempotent
writes whose acknowledgement is lost, per-tool call quotas that retries use up, loaded
skills for other templates that shrink the step budget; ``faults.py``) and ``"version": 3``
under version 3 (version 2 plus per-tool pagination and observation truncation;
``observations.py``). Version 1 payloads are unchanged, so stored runs keep their meaning.
Every candidate run on a case shares its ``noise_seed``, so comparisons on
the same case are paired replays; ``reseeded(case, seed)`` gives independent noise
(Luck Is Not Skill's unpaired arm).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from typing import Any

from suites.base import Case, Split, Suite, Verdict
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import Harness, HarnessError, load_harness
from suites.toolsim.seeding import derive_seed
from suites.toolsim.templates import TEMPLATES, get_template

SPLIT_CYCLE: tuple[Split, ...] = ("train", "select", "protected", "holdout", "test") * 3 + ("train",) * 5

SEED_PROGRAM = '''"""Seed harness for toolsim: no rules and no skills, so the agent follows its
strategy-free default plans (suites/toolsim/plans.py)."""


def harness():
    return {"version": 1, "rules": [], "skills": []}
'''

RUNNER_SOURCE = '''"""toolsim runner: return the candidate's harness document. The harness is
case-independent, so harness() is called without the payload; the trusted scorer parses
the document and runs the simulation in the parent."""


def run(fn, payload):
    return {"harness": fn()}
'''

SCORER_MODULES = (
    "agent", "backend", "episode", "faults", "harness", "observations", "plans", "scenarios", "seeding", "suite",
    "templates", "tools", "world",
)
"""Every module of the trusted simulation: ``scorer_version`` hashes them all."""


class ToolSim(Suite):
    """A simulated customer-service backend (see the module docstring)."""

    name = "toolsim"
    primary_metric = "success"
    entrypoint = "harness"
    artifact_kind = "rules"
    candidate = "an agent harness: rules and skills (a JSON document)"
    reference = "the seed harness (no rules); success is the share of requests fully served"

    def __init__(
        self,
        seed: int = 0,
        instances_per_template: int = 20,
        fault_rate: float = 0.15,
        flip_rate: float = 0.0,
        max_steps: int = 40,
        version: int = 1,
    ) -> None:
        if instances_per_template < 1:
            raise ValueError(f"toolsim: instances_per_template must be >= 1, got {instances_per_template}")
        for label, rate in (("fault_rate", fault_rate), ("flip_rate", flip_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"toolsim: {label} must be in [0, 1], got {rate}")
        if version not in (1, 2, 3):
            raise ValueError(f"toolsim: version must be 1, 2 or 3, got {version}")
        if not 1 <= max_steps <= 200:
            raise ValueError(f"toolsim: max_steps must be in 1..200, got {max_steps}")
        self.seed, self.instances_per_template = int(seed), int(instances_per_template)
        self.fault_rate, self.flip_rate, self.max_steps = float(fault_rate), float(flip_rate), int(max_steps)
        self.version = int(version)

    def cases(self) -> list[Case]:
        cases = []
        for name, template in TEMPLATES.items():
            for index in range(self.instances_per_template):
                world_seed = derive_seed(self.seed, "world", name, index)
                payload = {
                    "template": name,
                    "index": index,
                    "world_seed": world_seed,
                    "params": template.build(world_seed).request,
                    "noise_seed": derive_seed(self.seed, "noise", name, index),
                    "fault_rate": self.fault_rate,
                    "flip_rate": self.flip_rate,
                    "max_steps": self.max_steps,
                }
                if self.version >= 2:
                    payload["version"] = self.version
                cases.append(Case(f"{name}/{index:03d}", SPLIT_CYCLE[index % len(SPLIT_CYCLE)], payload))
        return cases

    def seed_program(self) -> str:
        return SEED_PROGRAM

    def runner_source(self) -> str:
        return RUNNER_SOURCE

    def episode(self, case: Case, output: Any) -> Episode:
        """The trusted simulation of ``case`` under the harness in ``output``; raises
        HarnessError when the output holds no valid harness. The distill stage reads the
        trajectory (``Episode.steps``) and fault events from here."""
        return run_episode(case.payload, _harness_of(output))

    def score(self, case: Case, output: Any) -> Verdict:
        try:
            simulated = self.episode(case, output)
        except HarnessError as exc:
            severity = get_template(case.payload["template"]).severity
            floor = {"success": 0.0, "observed_success": 0.0, "progress": 0.0, "tool_calls": 0.0, "cost": severity}
            return Verdict(False, floor, str(exc))
        return Verdict(True, simulated.metrics())

    def normalize(self, value: float) -> float:
        """``success`` is already a rate in [0, 1]; 1.0 is every request served."""
        return value

    def scorer_version(self) -> str:
        """Hash of every module the trusted simulation runs, not just this one."""
        digest = hashlib.sha256()
        for name in SCORER_MODULES:
            digest.update(inspect.getsource(importlib.import_module(f"suites.toolsim.{name}")).encode())
        return digest.hexdigest()[:16]


def reseeded(case: Case, noise_seed: int) -> Case:
    """The same case under another noise schedule: independent noise for unpaired arms."""
    return Case(case.case_id, case.split, {**case.payload, "noise_seed": int(noise_seed)})


def _harness_of(output: Any) -> Harness:
    if not isinstance(output, dict) or "harness" not in output:
        raise HarnessError("output", f"must be a mapping with a 'harness' entry, got {type(output).__name__}")
    return load_harness(output["harness"])
