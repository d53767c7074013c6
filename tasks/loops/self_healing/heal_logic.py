"""Pure logic of the self_healing loop (Self-Healing Harness): the candidate program of
an edited harness, the stored form of a rule proposal, which cases a proposal is
replayed on, and the gate over the replay. No I/O; the stage tasks are in
``tasks/loops/self_healing/heal.py`` and ``tasks/loops/self_healing/heal_gate.py``.

Choices where the paper is silent (or where toolsim differs from the paper's agents):
- gated metrics: ``success`` (primary), ``progress`` and ``cost`` (lower is better),
  tolerance 0. ``tool_calls`` is the cost analog the paper reports but does not gate on
  (a retry rule always adds calls), so it is recorded in ``scores`` and not weighed.
- triggers are the proposal's failing train cases that the champion still fails;
  protected cases are the train cases the champion passes. k=3, m=2 chosen by
  ``select_replay`` salted with the candidate id.
- the follow-up path (no trigger available) runs the candidate on the first 3 select
  cases (same hash order) against the champion's train runs as the unpaired baseline.
- the library guard's members are the champion harness's rules (by id) and skills (by
  name); it re-tests them on the protected + select cases every ``guard_interval``
  admissions (interval not given by the paper; see ``schemas.configs.HealConfig``).
- the ``accept_all`` ablation (not in the paper) still replays every rule and records
  what the gate would have decided; only the decision is overridden.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping, Sequence

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.paired_replay import (
    FollowupRun,
    ReplayCase,
    ReplayRule,
    followup_gate,
    paired_replay_gate,
    select_replay,
)
from tasks.harness_loops.metrics import GATED_METRICS, PRIMARY, Metrics

GATE = "paired_replay"
ACCEPT_ALL = "accept_all"
GUARD = "library_guard"
ADMITTING_GATES = (GATE, ACCEPT_ALL)
"""Gates whose accept admits a proposed rule (the guard interval counts these)."""
RULE = ReplayRule(primary=PRIMARY, k=3, m=2, tolerance=0.0, lower_is_better=("cost",), followup_n=3)


def replay_plan(
    triggers: Sequence[str], champion_train: Metrics, select_ids: Sequence[str], salt: str,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(trigger cases, protected cases, follow-up cases) to run the candidate on. The
    follow-up cases are used only when no trigger is available."""
    failing = [c for c in triggers if c in champion_train and champion_train[c][PRIMARY] < 1.0]
    passing = [c for c, m in champion_train.items() if m[PRIMARY] >= 1.0]
    chosen_triggers, protected = select_replay(failing, passing, RULE.k, RULE.m, salt)
    if chosen_triggers:
        return chosen_triggers, protected, ()
    followup, _ = select_replay(select_ids, (), RULE.followup_n, 0, salt)
    return (), (), followup


def _gated(metrics: Mapping[str, float]) -> dict[str, float]:
    return {m: metrics[m] for m in GATED_METRICS}


def decide(
    plan: tuple[Sequence[str], Sequence[str], Sequence[str]], before: Metrics, after: Metrics,
    *, scorer_versions: set[str], anchored: str, salt: str, seed: int,
) -> GateOutcome:
    """The replay gate when the plan has triggers; else the follow-up fallback."""
    triggers, protected, followup = plan
    if triggers:
        cases = [ReplayCase(c, "trigger", _gated(before[c]), _gated(after[c])) for c in triggers]
        cases += [ReplayCase(c, "protected", _gated(before[c]), _gated(after[c])) for c in protected]
        return paired_replay_gate(cases, RULE, scorer_versions=scorer_versions, anchored=anchored, salt=salt, seed=seed)
    runs = [FollowupRun(c, _gated(after[c])) for c in followup if c in after]
    baseline = [FollowupRun(c, _gated(m)) for c, m in sorted(before.items())]
    return followup_gate(runs, baseline, RULE, scorer_versions=scorer_versions, anchored=anchored, seed=seed)


def accept_all(outcome: GateOutcome) -> GateOutcome:
    """The ablation's decision: accept, recording what the replay gate decided."""
    evidence = {**json.loads(outcome.evidence_json), "gate": ACCEPT_ALL, "replay_decision": outcome.decision}
    return replace(outcome, decision="accept", evidence_json=json.dumps(evidence, sort_keys=True),
                   reason=f"accept_all ablation (the replay gate would {outcome.decision}: {outcome.reason})")


MEMBER_KINDS = (("rules", "id"), ("skills", "name"))


def ablations(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Library-guard members of a harness -> the harness without that member. A member
    is named ``rule:<id>`` or ``skill:<name>``; its proposals have that id as target."""
    out: dict[str, dict[str, Any]] = {}
    for kind, field in MEMBER_KINDS:
        items = list(document.get(kind, []))
        for i, item in enumerate(items):
            out[f"{kind[:-1]}:{item[field]}"] = {**document, kind: items[:i] + items[i + 1:]}
    return out


def member_target(member: str) -> str:
    return member.split(":", 1)[1]


def admissions_since_guard(decisions: Sequence[GateDecisionRow], round_index: int) -> int:
    """Rules admitted after the last guard before `round_index`, up to and including it.
    Only earlier rounds' guard decisions count, so the answer does not change once the
    guard of `round_index` has run (a resumed run finds the same guard due)."""
    last = max((d.round for d in decisions if d.gate == GUARD and d.round < round_index), default=0)
    return sum(1 for d in decisions
               if d.gate in ADMITTING_GATES and d.decision == "accept" and last < d.round <= round_index)
