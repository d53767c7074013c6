import ast
import random

import numpy as np

from schemas.configs import EvolveConfig
from suites.bin_packing import RUNNER_SOURCE, SEED_PROGRAM, BinPacking, best_fit_priority, pack_online
from suites.executors.subprocess import SubprocessExecutor
from tasks.proposers import grammar, make_proposer
from tasks.proposers.base import ParentInfo
from tasks.proposers.grammar_proposer import GrammarProposer, expression_of, jitter_constants


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _priority(source: str):
    namespace: dict = {}
    exec(compile(source, "<candidate>", "exec"), namespace)
    return namespace["priority"]


def test_operators_render_the_hand_written_expressions():
    x, y = _expr("gap"), _expr("item")
    assert ast.unparse(grammar.binary("div", x, y)) == "gap / (np.abs(item) + 1e-09)"
    assert ast.unparse(grammar.binary("le", x, y)) == "np.asarray(gap <= item, dtype=float)"
    assert ast.unparse(grammar.unary("log", _expr("gap"))) == "np.log1p(np.abs(gap))"
    assert ast.unparse(grammar.unary("expdecay", _expr("gap"))) == "np.exp(-np.abs(gap))"
    assert ast.unparse(grammar.unary("square", _expr("bins"))) == "bins * bins"


def test_render_and_parse_round_trip_and_best_fit_packs_as_best_fit():
    source = grammar.render(_expr("-gap"))
    assert ast.unparse(grammar.parse(source)) == "-gap"
    items = [0.5, 0.7, 0.3, 0.2, 0.4, 0.1]
    assert pack_online(items, 1.0, _priority(source)) == pack_online(items, 1.0, best_fit_priority)
    # hand-checked: 0.5->b0, 0.7->b1, 0.3->b1 (gap 0.0), 0.2->b0 (0.3 left), 0.4->b2, 0.1->b0
    assert pack_online(items, 1.0, _priority(source)) == [0, 1, 1, 0, 2, 0]
    assert grammar.parse(SEED_PROGRAM) is None  # three score lines: not a rendered program
    assert grammar.parse("def f():\n    return 1\n") is None


def test_constants_are_exposed_and_replaced_in_order():
    expr = _expr("0.5 * gap + 2.0 * np.asarray(gap <= 0.1, dtype=float) + gap / (np.abs(item) + 1e-09)")
    assert [c.value for c in grammar.constants_of(expr)] == [0.5, 2.0, 0.1]
    assert ast.unparse(grammar.with_constants(expr, [1.0, 3.0, 0.2])) == (
        "1.0 * gap + 3.0 * np.asarray(gap <= 0.2, dtype=float) + gap / (np.abs(item) + 1e-09)")
    jittered = jitter_constants(expr, random.Random(0))
    assert all(np.sign(a.value) == np.sign(b.value) for a, b in
               zip(grammar.constants_of(expr), grammar.constants_of(jittered)))


def test_every_grown_mutated_and_crossed_program_parses_and_uses_only_grammar_features():
    rng = random.Random(7)
    bins = np.array([0.05, 0.3, 0.9, 1.0])
    exprs = [grammar.grow(rng, 3) for _ in range(100)]
    exprs += [grammar.replace_subtree(e, rng) for e in exprs[:50]]
    exprs += [grammar.crossover(a, b, rng) for a, b in zip(exprs[:50], exprs[50:100])]
    for expr in exprs:
        source = grammar.render(expr)
        assert ast.unparse(grammar.parse(source)) == ast.unparse(expr)
        assert grammar.in_grammar(grammar.parse(source)), source
        with np.errstate(all="ignore"):
            scores = _priority(source)(0.2, bins)
        assert scores.shape == bins.shape


def test_in_grammar_rejects_foreign_names_and_calls():
    assert not grammar.in_grammar(_expr("os.system('x')"))
    assert not grammar.in_grammar(_expr("np.random.rand(3)"))
    assert grammar.in_grammar(_expr("np.sqrt(np.abs(gap)) - item"))


def test_proposer_children_differ_from_the_seed_and_name_their_operator():
    proposer = make_proposer("grammar", EvolveConfig(crossover_rate=0.5))
    assert isinstance(proposer, GrammarProposer)
    assert ast.unparse(expression_of(SEED_PROGRAM)) == "-gap"  # the seed is not a grammar program
    rng = random.Random(1)
    a = ParentInfo("a" * 64, SEED_PROGRAM, -4.0)
    b = ParentInfo("b" * 64, grammar.render(_expr("-gap + 0.5 * np.asarray(gap <= 0.1, dtype=float)")), -3.9)
    operators = set()
    for _ in range(40):
        child = proposer.propose([a, b], rng)
        operators.add(child.operator)
        assert child.source not in (a.source, b.source) and child.proposer == "grammar"
        assert grammar.in_grammar(grammar.parse(child.source))
        assert len(child.parent_ids) == (2 if child.operator == "grammar_crossover" else 1)
    assert {"grammar_grow", "grammar_wrap", "grammar_crossover"} <= operators


def test_a_program_with_neither_entrypoint_is_edited_by_the_mutate_operators():
    source = "def solve(x):\n    return x * 2.5 + 1\n"
    child = GrammarProposer(EvolveConfig()).propose([ParentInfo("c" * 64, source, 2.2)], random.Random(0))
    assert child.proposer == "grammar" and child.operator in ("constant", "operator", "compare", "statement",
                                                              "swap_lines")
    ast.parse(child.source)


def test_generated_programs_run_in_the_sandbox_and_pack_validly():
    suite = BinPacking(datasets=("or1",))
    cases = [c for c in suite.cases() if c.split == "select"][:2]
    rng = random.Random(3)
    programs = [grammar.render(grammar.grow(rng, 3)) for _ in range(3)]
    for program in programs:
        results = SubprocessExecutor().run(program, RUNNER_SOURCE, suite.entrypoint, cases)
        for case, result in zip(cases, results):
            assert suite.score(case, result.output).valid, (program, result)
