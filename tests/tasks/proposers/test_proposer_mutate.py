import ast
import math
import random
from collections import Counter

import pytest

from schemas.configs import MUTATION_OPERATORS, EvolveConfig
from tasks.proposers.ast_edits import constant_sites, operator_sites, statement_sites, swap_sites
from tasks.proposers.base import FailureMemoryItem, NoMutableSites, ParentInfo, ProposerError
from tasks.proposers.crossover import crossover_sites
from tasks.proposers.mutate import MutationProposer, operator_weights

PRIORITY = """import numpy as np

def priority(item, bins):
    score = -(bins - item)
    if item > 0.5 * bins.max():
        score = score * 1.5
    return score
"""


def parent(source: str, candidate_id: str = "a" * 64, score: float | None = 1.0) -> ParentInfo:
    return ParentInfo(candidate_id=candidate_id, source=source, score=score)


def only_site(source: str, finder):
    """Parse ``source`` and return (tree, the single site ``finder`` lists)."""
    tree = ast.parse(source)
    sites = finder(tree)
    assert len(sites) == 1, f"expected one site, found {len(sites)}"
    return tree, sites[0]


def test_same_seed_gives_the_same_child():
    proposer = MutationProposer(EvolveConfig())
    parents = [parent(PRIORITY), parent(PRIORITY.replace("1.5", "2.0"), "b" * 64)]
    for seed in range(20):
        first = proposer.propose(parents, random.Random(seed))
        second = proposer.propose(parents, random.Random(seed))
        assert first == second


def test_different_seeds_give_different_children():
    proposer = MutationProposer(EvolveConfig())
    children = {proposer.propose([parent(PRIORITY)], random.Random(seed)).source for seed in range(6)}
    assert len(children) >= 4


@pytest.mark.parametrize("mutations_per_child", [1, 4])
def test_children_always_parse_and_differ_from_their_parents(mutations_per_child):
    proposer = MutationProposer(EvolveConfig(mutations_per_child=mutations_per_child, crossover_rate=0.5))
    donor = PRIORITY.replace("score * 1.5", "score * 1.5 + item").replace("0.5", "0.7")
    parents = [parent(PRIORITY), parent(donor, "b" * 64)]
    normalised = {ast.unparse(ast.parse(p.source)) for p in parents}
    for seed in range(150):
        child = proposer.propose(parents, random.Random(seed))
        ast.parse(child.source)
        assert child.source not in normalised
        assert child.operator in MUTATION_OPERATORS
        assert child.proposer == "mutate"
        assert child.summary.startswith(child.operator + ": ")
        assert child.parent_ids == (("a" * 64, "b" * 64) if child.operator == "crossover" else ("a" * 64,))


def test_constant_moves_one_float_and_leaves_the_rest_unchanged():
    source = "SCALE = 0.35\n\ndef f(x):\n    return SCALE"
    proposer = MutationProposer(EvolveConfig(mutations_per_child=1))
    for seed in range(30):
        child = proposer.propose([parent(source)], random.Random(seed))
        new = ast.parse(child.source).body[0].value.value
        assert type(new) is float and new != 0.35
        assert abs(math.log(new / 0.35)) < 1.2  # 6 sigma of the log-normal jitter
        assert child.source == f"SCALE = {new!r}\n\ndef f(x):\n    return SCALE"
        assert child.summary == f"constant: 0.35 -> {new!r} at module level (line 1)"


def test_constant_keeps_ints_ints_and_never_touches_indices():
    source = "def f(a):\n    return a[0] + a[1, 2] * 10 + a.sum(axis=1)"
    tree, site = only_site(source, constant_sites)
    assert site(random.Random(0)) is not None
    new = tree.body[0].body[0].value.left.right.right  # the literal 10
    assert type(new.value) is int and new.value != 10
    assert ast.unparse(tree) == source.replace("10", str(new.value))


def test_constant_moves_a_float_zero_and_reports_the_sign():
    tree, site = only_site("X = -0.0", constant_sites)
    description = site(random.Random(3))
    assert tree.body[0].value.operand.value != 0.0
    assert description.startswith("-0.0 -> -")


def test_operator_swaps_arithmetic_within_the_safe_set():
    seen = set()
    for seed in range(40):
        tree, site = only_site("def f(a, b):\n    return a + b", operator_sites)
        site(random.Random(seed))
        seen.add(ast.unparse(tree.body[0].body[0].value))
    assert seen == {"a - b", "a * b", "a / b"}


def test_operator_turns_power_into_product_and_skips_strings():
    tree, site = only_site("def f(a, b):\n    return a ** b", operator_sites)
    site(random.Random(0))
    assert ast.unparse(tree) == "def f(a, b):\n    return a * b"
    assert operator_sites(ast.parse("def f(s):\n    return 'x' + s + f'{s}'")) == []
    assert len(operator_sites(ast.parse("def f(x):\n    x -= 2\n    return x"))) == 1


def test_compare_produces_each_other_ordering():
    proposer = MutationProposer(EvolveConfig(mutations_per_child=1))
    seen = {
        proposer.propose([parent("def f(a, b):\n    return a < b")], random.Random(seed)).source
        for seed in range(40)
    }
    assert seen == {f"def f(a, b):\n    return a {op} b" for op in ("<=", ">", ">=")}


def test_statement_deletes_or_duplicates_but_never_returns_or_docstrings():
    source = 'def f(x):\n    """Doc."""\n    y = x + 1\n    return y'
    results = set()
    for index in range(2):
        tree = ast.parse(source)
        sites = statement_sites(tree)
        assert len(sites) == 2
        sites[index](random.Random(0))
        results.add(ast.unparse(tree))
    assert results == {
        "def f(x):\n    \"\"\"Doc.\"\"\"\n    return y",
        "def f(x):\n    \"\"\"Doc.\"\"\"\n    y = x + 1\n    y = x + 1\n    return y",
    }
    assert statement_sites(ast.parse("def f(x):\n    return x")) == []


def test_statement_reaches_nested_blocks_but_never_empties_them():
    source = "def f(x):\n    if x:\n        x = 2\n    for i in x:\n        print(i)\n        x.append(i)\n    return x"
    tree = ast.parse(source)
    # `x = 2` alone in its block: duplicate only; the two loop statements: delete or duplicate.
    assert len(statement_sites(tree)) == 1 + 4


def test_swap_lines_swaps_only_independent_neighbours():
    source = (
        "import numpy as np\n\ndef f(x, out):\n"
        "    a = np.sin(x)\n    b = np.cos(x)\n    c = a + b\n    out.append(c)\n    d = out[0]\n    return d"
    )
    tree, site = only_site(source, swap_sites)
    description = site(random.Random(0))
    assert ast.unparse(tree) == source.replace("a = np.sin(x)\n    b = np.cos(x)", "b = np.cos(x)\n    a = np.sin(x)")
    assert description == "swap `a = np.sin(x)` and `b = np.cos(x)` in f (line 4)"


def test_crossover_takes_a_function_from_parent_b():
    a = "def helper(x):\n    return x + 1\n\ndef priority(item, bins):\n    return helper(bins) - item"
    b = "def helper(x):\n    return x * x - 3\n\ndef priority(item, bins):\n    return bins"
    proposer = MutationProposer(EvolveConfig(crossover_rate=1.0, mutations_per_child=1))
    seen = set()
    for seed in range(10):
        child = proposer.propose([parent(a), parent(b, "b" * 64)], random.Random(seed))
        assert child.operator == "crossover" and child.parent_ids == ("a" * 64, "b" * 64)
        seen.add(child.source)
    assert seen == {
        "def helper(x):\n    return x * x - 3\n\ndef priority(item, bins):\n    return helper(bins) - item",
        "def helper(x):\n    return x + 1\n\ndef priority(item, bins):\n    return bins",
    }


def test_crossover_blends_constants_of_same_shaped_definitions():
    a = "SCALE = 0.5\n\ndef f(x):\n    return x * 2.0 + 1.0"
    b = "SCALE = 3.0\n\ndef f(x):\n    return x * 7.0 + 9.0"
    proposer = MutationProposer(EvolveConfig(crossover_rate=1.0, mutations_per_child=1))
    for seed in range(20):
        child = proposer.propose([parent(a), parent(b, "b" * 64)], random.Random(seed))
        constants = [n for n in ast.walk(ast.parse(child.source)) if isinstance(n, ast.Constant)]
        values = [n.value for n in sorted(constants, key=lambda n: (n.lineno, n.col_offset))]
        assert child.operator == "crossover"
        assert values in ([3.0, 2.0, 1.0], [0.5, 7.0, 1.0], [0.5, 2.0, 9.0], [0.5, 7.0, 9.0])
        assert "from bbbbbbbbbbbb" in child.summary


def test_crossover_blends_whole_scripts_without_definitions():
    seen = set()
    for seed in range(20):
        tree = ast.parse("print(1.0 * 2.0)")
        (site,) = crossover_sites(tree, ast.parse("print(3.0 * 5.0)"), "b" * 64)
        assert site(random.Random(seed)).startswith("literals of the module from bbbbbbbbbbbb: ")
        seen.add(ast.unparse(tree))
    assert seen == {"print(3.0 * 2.0)", "print(1.0 * 5.0)", "print(3.0 * 5.0)"}
    assert crossover_sites(ast.parse("print(1.0)"), ast.parse("print(1.0, 2.0)"), "b" * 64) == []


def test_crossover_that_would_copy_parent_b_falls_back_to_a_mutation():
    b = "import numpy as np\n\ndef priority(item, bins):\n    return bins"
    proposer = MutationProposer(EvolveConfig(crossover_rate=1.0))
    child = proposer.propose([parent(PRIORITY), parent(b, "b" * 64)], random.Random(0))
    assert child.operator != "crossover" and child.parent_ids == ("a" * 64,)


def test_failure_memory_lowers_the_penalised_operators_share():
    config = EvolveConfig(failure_min_support=3, mutations_per_child=1)
    proposer = MutationProposer(config)
    memory = [FailureMemoryItem("constant", "ZeroDivisionError", 9)]
    shares = {}
    for label, items in (("plain", []), ("penalised", memory)):
        rng = random.Random(123)
        counts = Counter(proposer.propose([parent(PRIORITY)], rng, items).operator for _ in range(500))
        shares[label] = counts["constant"] / 500
    # Four feasible operators: about 1/4 without memory, 0.25 / 3.25 with a 1/(1 + 9/3) penalty.
    assert 0.18 < shares["plain"] < 0.32
    assert shares["penalised"] < 0.12


def test_operator_weights_follow_the_documented_rule():
    config = EvolveConfig(failure_min_support=3)
    memory = [
        FailureMemoryItem("constant", "ZeroDivisionError", 3),
        FailureMemoryItem("constant", "timeout", 6),
        FailureMemoryItem("compare", "timeout", 2),  # below min support: ignored
        FailureMemoryItem("llm_diff", "timeout", 50),  # not ours: ignored
        FailureMemoryItem("crossover", "SyntaxError", 3_000_000),
    ]
    weights = operator_weights(config, memory)
    assert weights["constant"] == pytest.approx(1 / 2 * 1 / 3)
    assert weights["compare"] == 1.0 and set(weights) == set(MUTATION_OPERATORS)
    assert 0.0 < weights["crossover"] < 1e-5
    assert operator_weights(EvolveConfig(failure_memory=False), memory) == {op: 1.0 for op in MUTATION_OPERATORS}


def test_program_without_mutable_sites_is_a_clear_error():
    with pytest.raises(NoMutableSites, match="parent a+ has no mutable site"):
        MutationProposer(EvolveConfig()).propose([parent("def f(s):\n    return 'x' + s")], random.Random(0))


def test_bad_parents_are_named():
    proposer = MutationProposer(EvolveConfig())
    with pytest.raises(ProposerError, match=r"parent a+ does not parse: .* line 1"):
        proposer.propose([parent("def f(:\n")], random.Random(0))
    with pytest.raises(ValueError, match="at least one parent"):
        proposer.propose([], random.Random(0))


def test_mutate_is_always_available():
    assert MutationProposer(EvolveConfig()).available()[0] is True


def test_an_operator_prior_steers_which_operator_a_child_uses():
    parent = ParentInfo("p", "def f(x, y):\n    a = x * 2.0\n    b = y + 1.0\n    return a < b\n", None)
    prior = {"constant": 1.0, "operator": 1e-9, "compare": 1e-9, "statement": 1e-9, "swap_lines": 1e-9}
    proposer = MutationProposer(EvolveConfig(crossover_rate=0.0), operator_prior=prior)
    assert {proposer.propose([parent], random.Random(seed)).operator for seed in range(20)} == {"constant"}
    plain = MutationProposer(EvolveConfig(crossover_rate=0.0))
    assert len({plain.propose([parent], random.Random(seed)).operator for seed in range(20)}) > 1
