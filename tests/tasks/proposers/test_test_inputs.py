"""The llm path's answer parser (no endpoint is called here) and its refusal offline."""

from __future__ import annotations

import random

import pytest

from schemas.configs import EvolveConfig
from tasks.proposers.test_inputs import brief, llm_arguments, parse_arguments


def test_parse_takes_the_first_array_keeps_lists_of_the_arity_without_duplicates():
    text = 'Here you go:\n[[1, 2], [1, 2], [3], [-1, "x"], [0, 0]]\nthanks'
    assert parse_arguments(text, 2, 10) == ([[1, 2], [-1, "x"], [0, 0]], None)
    assert parse_arguments(text, 2, 2) == ([[1, 2], [-1, "x"]], None)
    assert parse_arguments("no inputs", 1, 3) == ([], "the answer holds no JSON array")
    assert parse_arguments("[[1], [2]]", 2, 3) == ([], "no argument list of 2 values in the answer")
    for cut in ("[[1, 2]", "[[1, 2],, ]"):
        args, why = parse_arguments(cut, 2, 3)
        assert args == [] and why.startswith("the answer's array is not JSON")
    assert parse_arguments('{"a": [1]}', 1, 3) == ([], "no argument list of 1 values in the answer")


def test_the_brief_is_the_prompt_file_filled_in():
    text = brief("def f(x: int)\nDouble x.", ["int"], 5)
    assert "def f(x: int)\nDouble x." in text and "types the original accepts: int" in text
    assert "ONE JSON array of 5 argument lists" in text


def test_without_an_endpoint_the_llm_path_refuses():
    with pytest.raises(ValueError, match="RATCHET_LLM_BASE_URL"):
        llm_arguments("def f(x)", ["int"], 3, EvolveConfig(), random.Random(0), env={})
