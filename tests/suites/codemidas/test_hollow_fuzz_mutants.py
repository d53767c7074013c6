"""Hollowing, spec, fuzz inputs and mutants on hand-built functions."""

from __future__ import annotations

import ast

from suites.codemidas import fuzz
from suites.codemidas.hollow import free_names, hollow, spec_of, task_functions, why_not_task
from suites.codemidas.mutants import site_mutants, trivial_mutants

CLAMP = '''def clamp_sum(xs, limit):
    """Sum of xs, capped at limit."""
    total = 0
    for x in xs:
        total += x
    if total > limit:
        return limit
    return total
'''

MODULE = CLAMP + '''

SCALE = 3


def scaled(x):
    y = x * SCALE
    return y


def shout(text):
    print(text)
    return text


def short(a):
    return a
'''


def _node(source: str) -> ast.FunctionDef:
    return ast.parse(source).body[0]


def test_free_names_are_what_the_body_loads_but_never_binds():
    assert free_names(_node(CLAMP)) == set()
    assert free_names(_node("def f(a):\n    b = [c for c in a]\n    return len(b) + K\n")) == {"len", "K"}


def test_task_functions_keep_self_contained_ones_and_say_why_others_are_dropped():
    kept, dropped = task_functions(MODULE)
    assert [f.name for f in kept] == ["clamp_sum"]
    assert kept[0].params == ("xs", "limit") and kept[0].annotations == (None, None)
    assert dropped == {
        "scaled": "uses names outside the function: ['SCALE']",
        "shout": "uses names outside the function: ['print']",
        "short": "body shorter than 2 statements",
    }
    assert why_not_task(_node("def g(*a):\n    x = 1\n    return x\n")) == "variadic or required keyword-only parameters"


def test_spec_is_signature_and_docstring_and_stub_keeps_them():
    assert spec_of(_node(CLAMP)) == "def clamp_sum(xs, limit):\nSum of xs, capped at limit."
    assert hollow(CLAMP) == 'def clamp_sum(xs, limit):\n    """Sum of xs, capped at limit."""\n    raise NotImplementedError()\n'


def test_fuzz_arguments_are_seeded_and_typed():
    first = fuzz.arguments(("list[int]", "int"), 0, "clamp_sum", 10)
    assert first == fuzz.arguments(("list[int]", "int"), 0, "clamp_sum", 10)
    assert first != fuzz.arguments(("list[int]", "int"), 1, "clamp_sum", 10)
    assert len(first) == 10 and len({repr(a) for a in first}) == 10
    assert all(isinstance(xs, list) and all(type(x) is int for x in xs) and type(n) is int for xs, n in first)
    assert len(fuzz.arguments(("bool",), 0, "f", 10)) == 2  # only True and False exist


def test_assignments_keep_annotated_types_and_probe_the_rest():
    assert fuzz.assignments(("int",)) == [("int",)]
    assert fuzz.assignments(("List[str]", None)) == [("list[str]", kind) for kind in fuzz.TYPES]
    assert len(fuzz.assignments((None, None, None))) == 4 ** 3


def test_outcome_accepts_only_runner_outputs():
    assert fuzz.outcome({"returns": "int:3"}) == "returns:int:3"
    assert fuzz.outcome({"raises": "ValueError"}) == "raises:ValueError"
    assert fuzz.outcome({"returns": 3}) is None
    assert fuzz.outcome({"returns": "int:3", "raises": "X"}) is None
    assert fuzz.outcome("returns:int:3") is None


def test_trivial_and_site_mutants_of_a_hand_built_function():
    none, first = trivial_mutants(CLAMP)
    assert none.source == 'def clamp_sum(xs, limit):\n    """Sum of xs, capped at limit."""\n    return None\n'
    assert first.source.endswith("    return xs\n")
    mutants = site_mutants(CLAMP)
    # breadth-first order: `total = 0` (depth 3), then `total += x` in the loop, then `total > limit`
    assert [m.name for m in mutants] == ["shift_const_0", "swap_binop_1", "flip_compare_2"]
    assert "total = 1\n" in mutants[0].source
    assert "total -= x\n" in mutants[1].source
    assert "if total <= limit:\n" in mutants[2].source
    assert len(site_mutants(CLAMP, limit=2)) == 2
