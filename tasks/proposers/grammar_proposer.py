"""The `grammar` proposer: structure search from a grammar of the problem's features
(``tasks.proposers.grammar``), the non-LLM proposer of issue 14.

One child of a ``priority(item, bins)`` parent is made by one operator, drawn with
equal weight among those that apply:
- ``grammar_grow``: one subtree of the parent's expression (the root included) is
  regrown from the grammar, at most 2 levels deep;
- ``grammar_wrap``: the expression is combined (+, -, *) with a fresh small term;
- ``grammar_constant``: each constant of the structure is multiplied by
  exp(N(0, 0.5)) (only when it has constants);
- ``grammar_crossover`` (with two parents, probability ``crossover_rate``): a subtree of
  parent A is replaced by a subtree of parent B.
Before those, with probability ``tune_rate`` when the parent has constants and the
caller passed the run's scored programs (``history``): ``grammar_tpe``, the parent's
structure with constants TPE suggests from the scored programs of that same structure
(``constant_search``; each |constant| log-uniform in [|c|/4, 4|c|] around the parent's,
sign kept). A TPE child equal to a parent falls through to the operators above.
A parent that is not a grammar program (the suite's seed) is read as best fit,
``-gap``, which is what bin_packing's seed computes with its knobs at 0. A child over
``MAX_SIZE`` nodes, or equal to its parent, is redrawn (up to ``MAX_DRAWS`` times).

A ``construct_packing(n)`` parent (circle_packing) is searched as a structure instead:
layout family, per-layer counts, sizes and twists, jitter, polish and basin hops
(``circle_program``), edited by the operators of ``circle_grammar`` (``circle_*``), or with probability
``tune_rate`` by ``circle_tpe`` (its constants from TPE over the scored programs of the
same layout, counts, seed and polish, each within 2 mutation steps of the parent's); the
suite's seed is read as its rings with no polish. A parent with neither entrypoint has
no grammar here: the `mutate` proposer's operators edit it, and the child is recorded
as the grammar proposer's.
"""

from __future__ import annotations

import ast
import math
import random
from dataclasses import replace
from typing import Sequence

from schemas.configs import EvolveConfig
from tasks.proposers import circle_grammar, circle_program, grammar
from tasks.proposers.constant_search import Axis, Trial, suggest
from tasks.proposers.base import FailureMemoryItem, ParentInfo, Proposal, ProposerError
from tasks.proposers.mutate import MutationProposer

MAX_DRAWS = 32
MAX_SIZE = 60
"""Bloat limit: nodes of a child's expression."""


def _defines(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def expression_of(source: str) -> ast.expr:
    """The grammar expression of a ``priority`` program: its own, or best fit's."""
    expr = grammar.parse(source)
    if expr is None or not grammar.in_grammar(expr):
        return ast.parse(grammar.BEST_FIT, mode="eval").body
    return expr


def jitter_constants(expr: ast.expr, rng: random.Random, sigma: float = 0.5) -> ast.expr:
    """Each constant times exp(N(0, sigma)), rounded to 4 significant digits."""
    values = [float(f"{c.value * math.exp(rng.gauss(0.0, sigma)):.4g}") for c in grammar.constants_of(expr)]
    return grammar.with_constants(expr, values)


def grammar_child(a: ast.expr, b: ast.expr | None, rng: random.Random, crossover_rate: float) -> tuple[str, ast.expr]:
    """(operator, child expression) of one draw; the rule is the module docstring's."""
    if b is not None and rng.random() < crossover_rate:
        return "grammar_crossover", grammar.crossover(a, b, rng)
    operators = ["grammar_grow", "grammar_wrap"] + (["grammar_constant"] if grammar.constants_of(a) else [])
    operator = rng.choice(operators)
    if operator == "grammar_grow":
        return operator, grammar.replace_subtree(a, rng)
    if operator == "grammar_wrap":
        return operator, grammar.wrap(a, rng)
    return operator, jitter_constants(a, rng)


class GrammarProposer:
    """Grammar-guided structure search; needs nothing external, so it is always available."""

    name = "grammar"
    reads_history = True
    """The sample stage passes ``history``: the run's scored programs (``Proposer``)."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config = config
        self._fallback = MutationProposer(config)
        self._shapes: dict[str, tuple[str, tuple[float, ...]] | None] = {}

    def available(self) -> tuple[bool, str]:
        return True, "the grammar proposer needs nothing external"

    def propose(
        self,
        parents: Sequence[ParentInfo],
        rng: random.Random,
        failure_memory: Sequence[FailureMemoryItem] = (),
        history: Sequence[ParentInfo] = (),
    ) -> Proposal:
        """A child of ``parents[0]`` (crossed with ``parents[1]`` when drawn);
        ``history``: the run's scored programs, for ``grammar_tpe``/``circle_tpe``."""
        if not parents:
            raise ValueError("propose needs at least one parent; got none")
        known = {p.source for p in parents[:2]}
        if _defines(parents[0].source, "construct_packing"):
            return self._tuned(parents[0], history, rng, known) or self._propose_circles(parents, rng)
        if not _defines(parents[0].source, "priority"):
            return replace(self._fallback.propose(parents, rng, failure_memory), proposer=self.name)
        if (tuned := self._tuned(parents[0], history, rng, known)) is not None:
            return tuned
        a = expression_of(parents[0].source)
        b = expression_of(parents[1].source) if len(parents) > 1 else None
        for _ in range(MAX_DRAWS):
            operator, child = grammar_child(a, b, rng, self.config.crossover_rate)
            source = grammar.render(child)
            if grammar.size(child) <= MAX_SIZE and source not in known:
                parent_ids = tuple(p.candidate_id for p in parents[: 2 if operator == "grammar_crossover" else 1])
                summary = f"{operator}: score = {ast.unparse(child)}"
                return Proposal(source, operator, parent_ids, self.name, summary)
        raise ProposerError(
            f"every grammar edit drawn for parent {parents[0].candidate_id} reproduced a parent or "
            f"exceeded {MAX_SIZE} nodes ({MAX_DRAWS} draws)"
        )

    def _propose_circles(self, parents: Sequence[ParentInfo], rng: random.Random) -> Proposal:
        """A circle packing child: one ``circle_grammar`` edit of the parents' structures."""
        a = circle_program.structure_of(parents[0].source)
        b = circle_program.structure_of(parents[1].source) if len(parents) > 1 else None
        known = {p.source for p in parents[:2]}
        for _ in range(MAX_DRAWS):
            operator, child = circle_grammar.child_structure(a, b, rng, self.config.crossover_rate)
            source = circle_program.render(child)
            if source not in known:
                parent_ids = tuple(p.candidate_id for p in parents[: 2 if operator == "circle_crossover" else 1])
                summary = f"{operator}: " + circle_program.describe(child)
                return Proposal(source, operator, parent_ids, self.name, summary)
        raise ProposerError(
            f"every circle structure edit drawn for parent {parents[0].candidate_id} reproduced a parent "
            f"({MAX_DRAWS} draws)"
        )

    def _tuned(self, parent: ParentInfo, history: Sequence[ParentInfo], rng: random.Random,
               known: set[str]) -> Proposal | None:
        """The ``*_tpe`` child of ``parent`` when drawn (module docstring), else None."""
        shape = self._shape(parent)
        if not history or shape is None or not shape[1] or rng.random() >= self.config.tune_rate:
            return None
        key, centre = shape
        trials = [Trial(s[1], h.score) for h in history
                  if h.score is not None and (s := self._shape(h)) is not None and s[0] == key]
        structure = circle_program.parse(parent.source)
        axes = circle_axes(structure) if structure is not None else expression_axes(centre)
        values = suggest(axes, trials, rng.randrange(2**31))
        if structure is not None:
            child = circle_program.with_constant_values(structure, values)
            source, operator, text = circle_program.render(child), "circle_tpe", circle_program.describe(child)
        else:
            expr = expression_of(parent.source)
            signs = [math.copysign(1.0, c.value) for c in grammar.constants_of(expr)]
            child_expr = grammar.with_constants(expr, [float(f"{s * v:.4g}") for s, v in zip(signs, values)])
            source, operator, text = grammar.render(child_expr), "grammar_tpe", f"score = {ast.unparse(child_expr)}"
        if source in known:
            return None
        plural = "" if len(trials) == 1 else "s"
        summary = f"{operator}: constants from TPE over {len(trials)} scored program{plural} of this structure; {text}"
        return Proposal(source, operator, (parent.candidate_id,), self.name, summary)

    def _shape(self, member: ParentInfo) -> tuple[str, tuple[float, ...]] | None:
        """(structure key, constants) of a grammar program (cached per candidate), None
        for a program of no grammar structure."""
        if member.candidate_id not in self._shapes:
            self._shapes[member.candidate_id] = shape_of(member.source)
        return self._shapes[member.candidate_id]


def shape_of(source: str) -> tuple[str, tuple[float, ...]] | None:
    """A grammar program's structure key (what it is with its constants left out; for an
    expression, their signs stay in) and its constants (absolute values for an
    expression); None for a program the grammar did not write."""
    if (structure := circle_program.parse(source)) is not None:
        fixed = {k: v for k, v in structure.items() if k not in circle_program.CONSTANTS}
        return f"circles {sorted(fixed.items())}", tuple(circle_program.constant_values(structure))
    expr = grammar.parse(source)
    if expr is None or not grammar.in_grammar(expr):
        return None
    values = [c.value for c in grammar.constants_of(expr)]
    key = grammar.with_constants(expr, [math.copysign(1.0, v) for v in values])
    return f"expression {ast.unparse(key)}", tuple(abs(v) for v in values)


def expression_axes(centre: Sequence[float]) -> list[Axis]:
    """|constant| log-uniform within a factor 4 of the parent's (1 for a zero)."""
    return [Axis((m or 1.0) / 4, (m or 1.0) * 4, log=True) for m in centre]


def circle_axes(structure: dict) -> list[Axis]:
    """Each constant within 2 of its mutation steps of the parent's, inside its bounds."""
    bounds = []
    for field, bound in circle_program.CONSTANTS.items():
        bounds += [bound] * (len(structure[field]) if field in circle_program.LAYER_FIELDS else 1)
    return [Axis(max(low, v - 2 * step), min(high, v + 2 * step))
            for v, (low, high, step) in zip(circle_program.constant_values(structure), bounds)]
