"""FORGE's prompt gate and stagnation counter on hand-computed values."""

import random

import pytest

from tasks.loops.forge.prompt import batch_of, prompt_gate, stagnation


def test_batch_is_distinct_sorted_and_capped():
    ids = [f"c{i}" for i in range(10)]
    batch = batch_of(ids, 4, random.Random(0))
    assert len(set(batch)) == 4 and batch == sorted(batch) and set(batch) <= set(ids)
    assert batch_of(ids[:3], 8, random.Random(0)) == ["c0", "c1", "c2"]
    assert batch == batch_of(list(reversed(ids)), 4, random.Random(0))


def test_prompt_gate_needs_the_batch_then_strict_validation():
    no_batch = prompt_gate(0.5, 0.5, None, 0.4)
    assert not no_batch.accepted and not no_batch.evaluated
    assert prompt_gate(0.75, 0.5, 0.5, 0.4).accepted
    tie = prompt_gate(0.75, 0.5, 0.4, 0.4)
    assert not tie.accepted and tie.evaluated and "validation 0.400 -> 0.400" in tie.reason
    with pytest.raises(ValueError):
        prompt_gate(0.75, 0.5, None, 0.4)


def test_stagnation_counts_steps_without_improvement_up_to_patience():
    s = stagnation(0.5, 0, 0.6, patience=2)
    assert (s.best_val, s.steps_since_improve, s.synthesize) == (0.6, 0, False)
    s = stagnation(0.6, 0, 0.6, patience=2)
    assert (s.best_val, s.steps_since_improve, s.synthesize) == (0.6, 1, False)
    s = stagnation(0.6, 1, 0.55, patience=2)
    assert (s.best_val, s.steps_since_improve, s.synthesize) == (0.6, 2, True)
