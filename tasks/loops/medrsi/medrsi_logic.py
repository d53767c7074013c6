"""Pure logic of the medrsi loop (MedRSI on toolsim): failure priority and clusters,
tools as harness edits, the request-batch stream, balanced success, and which trial
batches a pooled tool has seen. No I/O; the stage tasks are in ``tasks/loops/medrsi/medrsi_stages.py`` and
``tasks/loops/medrsi/medrsi_gate.py``.

How this departs from the paper (no clinic, no LLM, no model training here):
- a case is a toolsim request, a "patient batch" is ``batch_size`` requests of the
  select and protected splits, taken in a fixed seeded order; when the stream runs out
  it wraps round, so later trials re-see requests (the paper's caveat on trial-set
  reuse applies, more strongly).
- clinical severity is the template's failure cost (the suite's ``cost`` metric:
  severity, doubled when a guard broke). A failure cluster is (template, signature),
  the signature being the error code that ended the plan, else the unmet or broken
  conditions; its priority is failure count x mean cost (= the cluster's summed cost).
- a "tool" is one harness edit the rule proposer derives from the top-priority
  cluster it can act on: a rule added (``add_rule``) or a template procedure written
  (``put_skill``). Revisions and removals of existing rules are not tools. Trained
  specialist models are not built.
- the frozen "dependencies" of a tool are the simulation it runs in (the run's
  anchored scorer version) and the stable harness it was composed with.
- the main metric is balanced success: the mean over templates of per-template
  success, the analog of balanced accuracy over classes.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Mapping, Sequence

from tasks.gate.best_so_far import GateOutcome
from tasks.gate.slow_registration import FrozenTool, TrialBatch, registration_gate
from tasks.proposers.rule_evidence import Trace, error_of, failure_point
from tasks.proposers.rule_operators import Candidate
from tasks.proposers.rules import RuleProposal, apply_candidate

Metrics = Mapping[str, Mapping[str, float]]
"""case_id -> metric -> value, for one candidate."""

SKILL_OPERATORS = ("gap_skill", "extract_skill")
REVISION_OPERATORS = ("revise_rule", "remove_rule")


@dataclass(frozen=True)
class Failure:
    """One failed discovery case of the stable harness, with its cost (severity)."""

    case_id: str
    template: str
    signature: str
    cost: float

    @property
    def cluster_id(self) -> str:
        return f"{self.template}:{self.signature}"


@dataclass(frozen=True)
class Cluster:
    cluster_id: str
    case_ids: tuple[str, ...]
    mean_cost: float

    @property
    def priority(self) -> float:
        """Failure count x cost: the summed cost the cluster's failures incurred."""
        return len(self.case_ids) * self.mean_cost


def signature(trace: Trace) -> str:
    """What ended the episode badly: the error code of the failed step that ended the
    plan, else the broken guards, else the unmet goals."""
    index = failure_point(trace)
    if index is not None:
        error = error_of(trace.steps[index]) or {}
        return f"error:{error.get('code', 'failed_step')}"
    if trace.broken:
        return "broken:" + ",".join(sorted(trace.broken))
    return "unmet:" + ",".join(sorted(trace.unmet))


def failures_of(traces: Sequence[Trace], cost: Mapping[str, float]) -> list[Failure]:
    """The failed traces as failures, each with its case's cost."""
    return [Failure(t.case_id, t.template, signature(t), float(cost[t.case_id])) for t in traces if not t.success]


def rank_clusters(failures: Sequence[Failure]) -> list[Cluster]:
    """Clusters by priority, highest first; ties by cluster id."""
    grouped: dict[str, list[Failure]] = defaultdict(list)
    for failure in failures:
        grouped[failure.cluster_id].append(failure)
    clusters = [Cluster(cid, tuple(sorted(f.case_id for f in members)), fmean(f.cost for f in members))
                for cid, members in grouped.items()]
    return sorted(clusters, key=lambda c: (-c.priority, c.cluster_id))


# -- tools ---------------------------------------------------------------------------


def tool_edit(proposal: RuleProposal) -> str | None:
    """"add_rule" or "put_skill" for a proposal that adds a tool; None for a revision
    or removal of an existing rule."""
    if proposal.operator in REVISION_OPERATORS:
        return None
    return "put_skill" if proposal.operator in SKILL_OPERATORS else "add_rule"


def tool_item(proposal: RuleProposal, edit: str) -> dict[str, Any]:
    """The rule or skill the proposal added."""
    kind, field = ("skills", "name") if edit == "put_skill" else ("rules", "id")
    return next(item for item in proposal.document[kind] if item.get(field) == proposal.target)


def tool_id(edit: str, item: Mapping[str, Any]) -> str:
    """Content id of what the tool does (its id or name left out): stable across re-freezes."""
    body = {k: v for k, v in item.items() if k not in ("id", "name", "note")}
    return hashlib.sha256(json.dumps({"edit": edit, "item": body}, sort_keys=True).encode()).hexdigest()[:16]


def with_tool(stable: Mapping[str, Any], edit: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The stable harness composed with the tool (a skill replaces the template's one)."""
    document, _ = apply_candidate(stable, Candidate("tool", edit, dict(item), 0, 0, (), ""))
    return document


# -- batches and metrics ---------------------------------------------------------------


def stream_order(case_ids: Sequence[str], seed: int) -> list[str]:
    """The fixed order in which requests arrive: by a seeded hash of the case id."""
    return sorted(case_ids, key=lambda c: hashlib.sha256(f"{seed}\x1f{c}".encode()).hexdigest())


def batch_case_ids(stream: Sequence[str], batch_size: int, batch_index: int) -> list[str]:
    """Batch ``batch_index`` (1-based): the next ``batch_size`` requests, wrapping round."""
    if not stream:
        raise ValueError("the request stream is empty: the suite has no select or protected cases")
    if batch_index < 1:
        raise ValueError(f"batch_index {batch_index}: batches are numbered from 1")
    start = (batch_index - 1) * batch_size
    return [stream[(start + i) % len(stream)] for i in range(min(batch_size, len(stream)))]


def template_of(case_id: str) -> str:
    return case_id.split("/", 1)[0]


def per_template_success(metrics: Metrics, case_ids: Sequence[str]) -> dict[str, float]:
    """Template -> success rate over the given cases."""
    grouped: dict[str, list[float]] = defaultdict(list)
    for case_id in case_ids:
        grouped[template_of(case_id)].append(metrics[case_id]["success"])
    return {template: fmean(values) for template, values in sorted(grouped.items())}


def balanced_success(metrics: Metrics, case_ids: Sequence[str]) -> float:
    """Mean over templates of per-template success (balanced accuracy's analog)."""
    return fmean(per_template_success(metrics, case_ids).values())


def mean_cost(metrics: Metrics, case_ids: Sequence[str]) -> float:
    return fmean(metrics[c]["cost"] for c in case_ids)


def trial_batches(admitted_round: int, current_round: int, n_batches: int) -> list[int]:
    """The batches a tool admitted (or re-frozen) in ``admitted_round`` has been trialled
    on by ``current_round``: the later ones only, at most ``n_batches``."""
    return list(range(admitted_round + 1, min(current_round, admitted_round + n_batches) + 1))


@dataclass(frozen=True)
class ToolTrial:
    """One pooled tool's trial so far: what was frozen, the batches it has seen, and
    the scorer versions behind them."""

    tool: FrozenTool
    batches: tuple[TrialBatch, ...]
    scorer_versions: frozenset[str]
    seed: int


def registration_pass(trials: Sequence[ToolTrial], stable_version: str, *, anchored: str, n_batches: int,
                      threshold: float) -> list[tuple[GateOutcome, str]]:
    """Slow registration over the pool in admission order: (outcome, the stable version
    it was weighed against) per tool. An accept makes that tool's harness the stable
    version, so every later tool of the pass was frozen against an older one and gets
    a re-test (decision trial, evidence retest)."""
    out = []
    for trial in trials:
        outcome = registration_gate(trial.tool, trial.batches, current_stable_version=stable_version,
                                    scorer_versions=trial.scorer_versions, anchored=anchored, n_batches=n_batches,
                                    threshold=threshold, seed=trial.seed)
        out.append((outcome, stable_version))
        if outcome.decision == "accept":
            stable_version = trial.tool.code_id
    return out


