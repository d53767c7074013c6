"""The llm path's pool (hand-built here; no endpoint is called): it is one more test-role
action after the fuzz profiles, its inputs follow theirs in the execute order, and an
empty pool (an answer with no usable input) is never drawn."""

import numpy as np

from suites.codemidas.suite import kept_tasks
from tasks.loops.cover.problems import GENERATORS, generators_for, problem
from tasks.loops.cover.policy import sample
from tasks.loops.cover.rounds import draw_tests


def test_the_llm_pool_is_the_last_generator_and_its_inputs_come_last():
    task = kept_tasks()[0]
    arity = len(task["kinds"])
    plain, written = problem(task, 0, 3), problem(task, 0, 3, [[0] * arity, [1] * arity, [2] * arity, [3] * arity])
    assert generators_for("mutate") == GENERATORS and generators_for("llm") == GENERATORS + ("llm",)
    assert plain.generators == GENERATORS and written.generators == GENERATORS + ("llm",)
    assert written.pools["llm"] == [[0] * arity, [1] * arity, [2] * arity]  # capped at pool_size
    assert written.inputs() == plain.inputs() + written.pools["llm"]
    assert written.input_offset("llm", 1) == len(plain.inputs()) + 1


def test_an_empty_llm_pool_is_never_drawn_and_the_offline_stream_is_unchanged():
    task = kept_tasks()[0]
    empty = problem(task, 0, 3, [])
    favour_llm = np.array([0.0, 0.0, 0.0, 0.0, 20.0])  # softmax puts ~all mass on llm
    drawn = draw_tests(empty, favour_llm, 50, np.random.default_rng(0))
    assert drawn and all(g < 4 for g, _ in drawn)
    plain = problem(task, 0, 3)
    logits = np.array([0.3, -0.2, 0.0, 0.5])
    rng = np.random.default_rng(1)  # the stream before the mask existed: sample, then a pool index
    before = [(g, int(rng.integers(len(plain.pools[GENERATORS[g]])))) for g in sample(logits, 20, rng)]
    assert draw_tests(plain, logits, 20, np.random.default_rng(1)) == before
