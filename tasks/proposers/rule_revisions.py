"""Revision and removal of rules that keep failing (Designer-RSI's *deepen*: a skill
that co-occurs with failures is revised locally before anything is rewritten).

A retry rule keeps failing when its trigger fires and the retried call fails again
with the same error, and that ends the episode. How it failed says what to change:

- the retries failed in most firings: the error outlasts them, so waiting is what is
  missing. The new ``backoff`` is one tick more than the longest delay at which a retry
  still failed (a rate limit that failed retries at offsets 0 and 1 is still in force
  one tick after the call: wait 2). This is how the backoff a rate limit needs is
  discovered from traces rather than known in advance;
- the retries failed now and then (a fresh fault on the new attempt): ``max`` goes up.

The evidence is the current harness's traces for its own rules, and the gate's replay
for a rejected proposal's rule (``Evidence.rejected``), so a retry rejected for
retrying too soon comes back with a backoff instead of being forgotten.

Any other rule whose own action ends failing episodes, and that never took part in a
success, is proposed for removal.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Mapping, Sequence

from suites.toolsim.harness import Rule, parse_harness
from tasks.proposers.rule_evidence import Evidence, Trace, failure_point, retry_chains, via_of
from tasks.proposers.rule_operators import Candidate, case_ids, covered, share

REVISE_MIN = 2
"""Failing episodes a rule must have ended before it is revised or removed."""
SYSTEMATIC = 0.5
"""Share of firings whose retries all failed above which the error is taken to outlast
the retries (wait longer) rather than to recur by chance (retry more)."""
MAX_BACKOFF, MAX_RETRIES = 8, 5


def _still_failing(traces: Sequence[Trace], rule: Rule) -> tuple[list[Trace], int, int, int]:
    """(failures a chain of ``rule`` ended, chains, failed chains, worst failing offset)."""
    failing, chains, failed, worst = [], 0, 0, -1
    for trace in traces:
        found = retry_chains(trace, rule.rule_id, rule.trigger.code)
        chains += len(found)
        bad = [offset for still, offset in found if still]
        failed += len(bad)
        worst = max([worst] + bad)
        point = failure_point(trace)
        if bad and not trace.success and point is not None and via_of(trace.steps[point]) == rule.rule_id:
            failing.append(trace)
    return failing, chains, failed, worst


def _revised(rule: Rule, raw: Mapping[str, Any], traces: Sequence[Trace], evidence: Evidence) -> Candidate | None:
    failing, chains, failed, worst = _still_failing(traces, rule)
    if len(case_ids(failing)) < REVISE_MIN:
        return None
    retry = dict(raw["action"]["retry"])
    backoff, most = retry.get("backoff", 0), retry["max"]
    if failed / chains >= SYSTEMATIC and backoff < MAX_BACKOFF:
        retry["backoff"] = min(MAX_BACKOFF, max(worst + 1, backoff + 1))
        change = (f"a retry {worst} tick(s) after the failed call still failed; proposing backoff {backoff} -> "
                  f"{retry['backoff']}")
    elif most < MAX_RETRIES:
        retry["max"] = most + 1
        change = f"a fresh {rule.trigger.code} now and then; proposing retry max {most} -> {most + 1}"
    else:
        return None
    item = {**copy.deepcopy(dict(raw)), "action": {"retry": retry}}
    rationale = (f"{rule.rule_id} fired {chains} times and its retries failed again with {rule.trigger.code} in "
                 f"{failed}, ending {share(failing, evidence)}: {change}")
    return Candidate.of("revise_rule", "replace_rule", item, failing, 3, rationale)


def _single(raw: Mapping[str, Any]) -> Rule:
    return parse_harness({"version": 1, "rules": [dict(raw)]}).rules[0]


def revise_rule(evidence: Evidence, document: Mapping[str, Any]) -> list[Candidate]:
    """Revisions of the harness's retry rules, and of rejected proposals' retry rules
    (added back revised, unless the harness already retries that error)."""
    harness = parse_harness(document)
    candidates = []
    traces = evidence.failures + evidence.successes
    for index, rule in enumerate(harness.rules):
        if rule.action.kind == "retry" and rule.trigger.kind == "on_error":
            revised = _revised(rule, document["rules"][index], traces, evidence)
            if revised is not None:
                candidates.append(replace(revised, index=index))
    for trial in evidence.rejected:
        raw = next((r for r in trial.proposal.document.get("rules", []) if r.get("id") == trial.proposal.target), None)
        rule = _single(raw) if raw is not None else None
        if rule is None or rule.action.kind != "retry" or rule.trigger.kind != "on_error":
            continue
        if covered(harness, "on_error", rule.trigger.tool, rule.trigger.code, action="retry"):
            continue
        revised = _revised(rule, raw, trial.traces, evidence)
        if revised is not None:
            candidates.append(replace(revised, edit="add_rule"))
    return candidates


def remove_rule(evidence: Evidence, document: Mapping[str, Any]) -> list[Candidate]:
    """Removal of non-retry rules whose own action keeps ending episodes in failure."""
    harness = parse_harness(document)
    candidates = []
    for index, rule in enumerate(harness.rules):
        helped = any(via_of(s) == rule.rule_id for t in evidence.successes for s in t.steps)
        ended = [t for t in evidence.failures
                 if failure_point(t) is not None and via_of(t.steps[failure_point(t)]) == rule.rule_id]
        if rule.action.kind == "retry" or helped or len(case_ids(ended)) < REVISE_MIN:
            continue
        rationale = (f"{rule.rule_id}'s own {rule.action.kind} ended {share(ended, evidence)} and it took part "
                     f"in no success; proposing to remove it")
        item = copy.deepcopy(dict(document["rules"][index]))
        candidates.append(Candidate.of("remove_rule", "remove_rule", item, ended, 1, rationale, index=index))
    return candidates


REVISION_OPERATORS = (revise_rule, remove_rule)
