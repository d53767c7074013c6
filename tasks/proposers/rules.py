"""The `rules` proposer: a non-LLM proposer of toolsim harness edits, derived from trace
evidence (Self-Healing Harness's template rules, Growing Harness's failure-driven
repair, Designer-RSI's expand and deepen, in place of their LLMs).

``RuleProposer.propose(evidence, harness, rng)`` returns one ``RuleProposal``: the edited
harness document, the failing cases that motivated the edit (the paired-replay gate's
triggers), a rationale that cites the counts, and the operator that made it.

How one edit is chosen:
1. Every operator reads the evidence (``rule_operators``: retry_on_error, precondition,
   switch_tool, paginate, reread, follow_up; ``skill_operators``: gap_skill,
   extract_skill; ``rule_revisions``: revise_rule, remove_rule) and lists candidates,
   each with its support (the number of distinct failing cases behind it) and the
   strength of its evidence.
2. Candidates the gate already rejected (``Evidence.rejected``, matched by ``key``) are
   dropped, so a loop that records rejections moves on to the next best edit.
3. The most supported candidates win, then the strongest; among those still tied the
   caller's ``random.Random`` chooses, so a retried stage with the same seed proposes
   the same edit.
4. The edit is applied to a copy of the document, which must parse under
   ``suites.toolsim.harness``; a candidate that would not is dropped and 3 repeats.

Pure: no I/O, no clock; the only randomness is ``rng``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from suites.toolsim.harness import HarnessError, parse_harness
from tasks.proposers.base import Proposal, ProposerError
from tasks.proposers.rule_evidence import Evidence, Trace, Trial
from tasks.proposers.rule_operators import RULE_OPERATORS, Candidate
from tasks.proposers.rule_revisions import REVISION_OPERATORS
from tasks.proposers.skill_operators import SKILL_OPERATORS

__all__ = ["Evidence", "NoRuleEvidence", "RuleProposal", "RuleProposer", "Trace", "Trial", "apply_candidate",
           "edit_key"]


class NoRuleEvidence(ProposerError):
    """The evidence supports no edit that has not been rejected already."""


@dataclass(frozen=True)
class RuleProposal:
    """One proposed harness edit."""

    document: dict[str, Any]
    """The whole edited harness document (it parses)."""
    triggers: tuple[str, ...]
    """Failing case ids whose evidence motivated the edit."""
    rationale: str
    operator: str
    key: str
    """Identifies the edit (not its wording): equal keys are the same edit."""
    target: str
    """Id of the rule added, revised or removed, or name of the skill written."""
    support: int
    call: Proposal | None = None
    """The LLM call that wrote the edit (its tokens and seconds become the candidate's
    columns, ``tasks.proposers.llm.call_cost``); None for the rule proposer. Not part of
    the stored proposal (``proposal_json``)."""


def normalised(harness: Mapping[str, Any] | str) -> dict[str, Any]:
    """A deep copy of the harness document with ``rules`` and ``skills`` lists present.
    Text must be JSON (YAML needs a parser this layer does not import)."""
    document = json.loads(harness) if isinstance(harness, str) else copy.deepcopy(dict(harness))
    parse_harness(document)
    document.setdefault("rules", [])
    document.setdefault("skills", [])
    return document


def edit_key(candidate: Candidate) -> str:
    """Hash of what the edit does; ids and notes are left out, so a rule re-proposed
    under another id is still recognised as rejected."""
    item = {k: v for k, v in candidate.item.items() if k not in ("id", "note", "name")}
    text = json.dumps({"edit": candidate.edit, "item": item, "index": candidate.index}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unique(wanted: str, taken: set[str]) -> str:
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted}-{n}"
    return name


def apply_candidate(document: Mapping[str, Any], candidate: Candidate) -> tuple[dict[str, Any], str]:
    """(the edited copy of ``document``, the id or name of what was edited)."""
    edited = normalised(document)
    rules, skills = edited["rules"], edited["skills"]
    item = copy.deepcopy(candidate.item)
    if candidate.edit == "add_rule":
        item["id"] = _unique(item["id"], {r.get("id", f"rules[{i}]") for i, r in enumerate(rules)})
        rules.append(item)
        return edited, item["id"]
    if candidate.edit in ("replace_rule", "remove_rule"):
        target = rules[candidate.index].get("id", f"rules[{candidate.index}]")
        if candidate.edit == "replace_rule":
            rules[candidate.index] = item
        else:
            del rules[candidate.index]
        return edited, target
    template = item["trigger"]["template"]
    kept = [s for s in skills if s["trigger"]["template"] != template]
    item["name"] = _unique(item["name"], {s["name"] for s in kept})
    edited["skills"] = kept + [item]
    return edited, item["name"]


def pick_edit(document: Mapping[str, Any], ranked: Sequence[Candidate], rng: random.Random) -> RuleProposal | None:
    """The best-ranked edit (ties broken by ``rng``) whose edited harness parses, as a
    proposal; None when none does. ``ranked`` is in the proposer's order."""
    pool = list(ranked)
    while pool:
        best = (pool[0].support, pool[0].strength)
        tied = [c for c in pool if (c.support, c.strength) == best]
        choice = tied[rng.randrange(len(tied))]
        edited, target = apply_candidate(document, choice)
        try:
            parse_harness(edited)
        except HarnessError:
            pool.remove(choice)
            continue
        return RuleProposal(edited, choice.triggers, choice.rationale, choice.operator, edit_key(choice),
                            target, choice.support)
    return None


class RuleProposer:
    """Derives rule and skill edits from trace evidence; needs nothing external."""

    name = "rules"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def candidates(self, evidence: Evidence, harness: Mapping[str, Any] | str) -> list[Candidate]:
        """Every edit the evidence supports, rejected ones included, in a fixed order."""
        document = normalised(harness)
        parsed = parse_harness(document)
        found = [c for operator in RULE_OPERATORS for c in operator(evidence, parsed)]
        found += [c for operator in SKILL_OPERATORS + REVISION_OPERATORS for c in operator(evidence, document)]
        return sorted(found, key=lambda c: (-c.support, -c.strength, edit_key(c)))

    def propose(self, evidence: Evidence, harness: Mapping[str, Any] | str, rng: random.Random) -> RuleProposal:
        rejected = {trial.proposal.key for trial in evidence.rejected}
        document = normalised(harness)
        pool = [c for c in self.candidates(evidence, document) if edit_key(c) not in rejected]
        proposal = pick_edit(document, pool, rng)
        if proposal is not None:
            return proposal
        raise NoRuleEvidence(
            f"no edit left to propose from {len(evidence.failures)} failures "
            f"({len(rejected)} rejected edits excluded)"
        )
