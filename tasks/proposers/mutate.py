"""The `mutate` proposer: AST-level mutation and crossover of Python programs, the honest
non-LLM proposer every evolve loop can run offline (DESIGN.md, "Proposers").

One child is made as follows, all draws from the caller's ``random.Random``:
1. Pick one operator. With two parents and a crossover site between them, crossover is
   picked with probability ``crossover_rate`` x its failure penalty; otherwise one of the
   single-parent operators that has a site in parent A, with probability proportional
   to its weight (base weight 1 each, times its failure penalty).
2. Apply n edits of that operator, n uniform in 1..``mutations_per_child``, each at a
   site drawn uniformly from the sites of the tree as edited so far (a site may be drawn
   again, so e.g. two jitters of one constant compound). One operator per
   child keeps the child's ``operator`` exact, so the distiller can blame failures on it.
3. Unparse with ``ast.unparse`` (comments and formatting of the parent are not kept;
   in a program with an EVOLVE-BLOCK only the block is parsed, edited and unparsed).
   A child identical to a parent, or one that does not parse, is discarded and steps
   1-3 are redrawn, up to ``MAX_DRAWS`` times; after one such crossover, crossover is
   dropped from the redraws (e.g. when B's only differing function is all of B, the
   child would just be B) and the child becomes a mutation of parent A.

Failure penalty of an operator: the product over failure-memory items naming it with
support s >= ``failure_min_support`` m of 1 / (1 + s / m). It is never zero, so a
penalised operator stays possible, and it is ignored when ``failure_memory`` is off.
Items naming operators this proposer does not have (e.g. the LLM's) are ignored.
"""

from __future__ import annotations

import ast
import copy
import functools
import random
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from schemas.configs import MUTATION_OPERATORS, EvolveConfig
from suites.blocks import join_block, split_block
from tasks.proposers.ast_edits import MUTATIONS, Site
from tasks.proposers.base import (
    FailureMemoryItem,
    NoMutableSites,
    ParentInfo,
    Proposal,
    ProposerError,
    effective_failure_memory,
)
from tasks.proposers.crossover import crossover_sites

MAX_DRAWS = 32
"""Redraws before giving up on a program whose every edit cancels out (practically
unreachable for a program with a numeric literal)."""


def operator_weights(config: EvolveConfig, failure_memory: Sequence[FailureMemoryItem]) -> dict[str, float]:
    """Each operator's weight: 1 times its failure penalty (rule in the module docstring).
    For crossover the weight multiplies ``crossover_rate``."""
    weights = {operator: 1.0 for operator in MUTATION_OPERATORS}
    min_support = config.failure_min_support
    for item in effective_failure_memory(failure_memory, config.failure_memory, min_support):
        if item.operator in weights:
            weights[item.operator] /= 1.0 + item.support / min_support
    return weights


def _parse(parent: ParentInfo) -> ast.Module:
    try:
        return ast.parse(parent.source)
    except SyntaxError as error:
        raise ProposerError(
            f"parent {parent.candidate_id} does not parse: {error.msg} at line {error.lineno}"
        ) from error


def _parses(source: str) -> bool:
    """Whether an unparsed child parses again (a guard against unparser corner cases)."""
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


class MutationProposer:
    """AST mutation and crossover; needs nothing external, so it is always available."""

    name = "mutate"

    def __init__(self, config: EvolveConfig, operator_prior: Mapping[str, float] | None = None) -> None:
        self.config = config
        self.operator_prior = dict(operator_prior or {})
        """A weight per operator multiplying its failure-memory weight (a proposing
        policy's operator distribution, e.g. rsi_anything's bandit); missing: 1."""

    def available(self) -> tuple[bool, str]:
        return True, "the mutate proposer needs nothing external"

    def propose(
        self,
        parents: Sequence[ParentInfo],
        rng: random.Random,
        failure_memory: Sequence[FailureMemoryItem] = (),
    ) -> Proposal:
        """A child of ``parents[0]``, or a crossover of ``parents[0]`` with ``parents[1]``.
        A parent with an EVOLVE-BLOCK (``suites.blocks``) changes only inside it: the block
        is mutated (crossed with the other parent's block, when it has one) and put back
        between the markers, so the rest keeps its text and comments."""
        if not parents:
            raise ValueError("propose needs at least one parent; got none")
        split = split_block(parents[0].source)
        if split is None:
            return self._propose(parents, rng, failure_memory)
        inner = [replace(p, source=part[1]) for p in parents if (part := split_block(p.source)) is not None]
        child = self._propose(inner, rng, failure_memory)
        head, _, indent, tail = split
        return replace(child, source=join_block(head, child.source, indent, tail))

    def _propose(self, parents: Sequence[ParentInfo], rng: random.Random,
                 failure_memory: Sequence[FailureMemoryItem]) -> Proposal:
        base = _parse(parents[0])
        donor = _parse(parents[1]) if len(parents) > 1 else None
        weights = operator_weights(self.config, failure_memory)
        weights = {op: w * self.operator_prior.get(op, 1.0) for op, w in weights.items()}
        feasible = [op for op in MUTATIONS if MUTATIONS[op](base)]
        can_cross = donor is not None and bool(crossover_sites(base, donor, parents[1].candidate_id))
        if not feasible and not can_cross:
            raise NoMutableSites(
                f"parent {parents[0].candidate_id} has no mutable site: no numeric literal, arithmetic "
                "operator, ordering comparison or simple statement in a function body"
                + ("" if donor is None else ", and no definition that differs from the other parent's")
            )
        known = {ast.unparse(tree) for tree in (base, donor) if tree is not None}
        for _ in range(MAX_DRAWS):
            if not feasible and not can_cross:
                break
            crossing = can_cross and (not feasible or rng.random() < self.config.crossover_rate * weights["crossover"])
            if crossing:
                operator = "crossover"
                finder = functools.partial(crossover_sites, donor=donor, donor_id=parents[1].candidate_id)
            else:
                operator = rng.choices(feasible, [weights[op] for op in feasible])[0]
                finder = MUTATIONS[operator]
            tree = copy.deepcopy(base)
            edits = self._edit(tree, finder, rng)
            child = ast.unparse(tree)
            if edits and child not in known and _parses(child):
                parent_ids = tuple(p.candidate_id for p in parents[: 2 if crossing else 1])
                summary = f"{operator}: " + "; ".join(edits)
                return Proposal(child, operator, parent_ids, self.name, summary)
            can_cross = can_cross and not crossing
        raise ProposerError(
            f"every edit drawn for parent {parents[0].candidate_id} reproduced a parent or failed to parse "
            f"({MAX_DRAWS} draws at most; crossover is dropped after one such draw)"
        )

    def _edit(self, tree: ast.Module, finder: Callable[[ast.Module], list[Site]], rng: random.Random) -> list[str]:
        """Apply 1..mutations_per_child edits in place, each at a site ``finder`` lists in
        the tree as edited so far; the descriptions of the edits that changed something."""
        edits: list[str] = []
        for _ in range(rng.randint(1, self.config.mutations_per_child)):
            sites = finder(tree)
            if not sites:
                break
            description = sites[rng.randrange(len(sites))](rng)
            if description is not None:
                edits.append(description)
        return edits
