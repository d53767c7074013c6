"""The frozen coding policy of harness_or_model on codemidas and one run of it under a
harness, on hand-built outcomes (no sandbox): the counts stay apart (solved but stopped by
the limit, finished but not solved)."""

import ast

import pytest

from suites.codemidas.mutants import retrieval
from tasks.loops.harness_or_model import coder
from tasks.loops.harness_or_model.arms import Arm, load_arm, tokens
from tasks.loops.harness_or_model.episode import (feedback, feedback_text, run_episode, trace_metrics,
                                                  usage_of_trace)

STUB = 'def twice(x):\n    """Twice x."""\n    raise NotImplementedError()\n'
TASK = {"task_id": "m::twice", "module": "m", "name": "twice", "kinds": ["int"], "stub": STUB}
VISIBLE = [{"args": [1], "expect": "returns:int:2"}, {"args": [2], "expect": "returns:int:4"},
           {"args": [0], "expect": "returns:int:0"}]


def arm(feedback_kind: str, limit: int) -> Arm:
    return Arm(f"{feedback_kind}-{limit}", "test arm", limit, False,
               {"feedback": feedback_kind, "instructions": "write it"})


def outcomes_by_strategy(table: dict[str, list]):
    """A fake sandbox: the outcome list of each repertoire body, and the memorising body
    answering what it memorised (looked up in its source) and its base's outcome else."""
    bodies = coder.repertoire(TASK)
    renamed = {s: ast.unparse(ast.parse(b.replace("def twice(", "def _twice_attempt(", 1))) for s, b in bodies.items()}

    def run(source: str) -> list:
        for strategy, body in bodies.items():
            if source == body:
                return table[strategy]
        (base,) = [s for s, text in renamed.items() if text in source]
        return [t["expect"] if f"key == {repr(t['args'])!r}" in source else got
                for t, got in zip(VISIBLE, table[base])]
    return run


def test_the_order_is_the_listed_one_at_seed_zero_and_a_seeded_permutation_after():
    assert coder.order("m::f", 0) == coder.STRATEGIES
    later = [coder.order("m::f", s) for s in range(1, 20)]
    assert all(sorted(o) == sorted(coder.STRATEGIES) for o in later)
    assert later == [coder.order("m::f", s) for s in range(1, 20)]  # no hidden state: the same for every arm
    assert len(set(later)) > 1


def test_the_repertoire_reuses_the_trivial_mutants_and_the_retrieval_solver():
    bodies = coder.repertoire(TASK)
    assert bodies["delegate"] == retrieval("m", "twice", 1)
    assert bodies["return_none"].endswith("return None\n") and bodies["return_first_arg"].endswith("return x\n")
    assert '"""Twice x."""' in bodies["return_none"]


@pytest.mark.parametrize("text, value", [
    ("int:-3", -3), ("NoneType:None", None), ("bool:True", True), ("str:'a, ]b'", "a, ]b"),
    ("bytes:b'A\\x00'", b"A\x00"), ("list[]", []), ("tuple[float:1.5, list[str:'x']]", (1.5, ["x"])),
])
def test_runner_texts_are_read_back_into_values(text, value):
    assert coder.value_of(text) == value and type(coder.value_of(text)) is type(value)


def test_outcomes_it_cannot_write_are_refused():
    assert coder.statement_of("raises:ValueError") == "raise ValueError()"
    assert coder.statement_of("raises:NotAnError") is None
    assert coder.statement_of("returns:NoneType:None | args after: list[int:1]") is None
    assert coder.statement_of("returns:set{int:1}") is None
    assert coder.statement_of("returns:tuple[int:1, int:2]") == "return (1, 2)"


def test_a_memorised_body_answers_its_inputs_and_delegates_the_rest():
    source = coder.memorised("def twice(x):\n    return x\n", "twice",
                             [{"args": [1], "expect": "returns:int:2"}, {"args": [5], "expect": "raises:KeyError"}])
    scope: dict = {}
    exec(source, scope)
    assert scope["twice"](1) == 2 and scope["twice"](7) == 7
    with pytest.raises(KeyError):
        scope["twice"](5)


def test_feedback_shows_the_first_failure_only_under_first_failure():
    got = ["returns:int:2", "raises:TypeError", None]
    assert feedback("pass_fraction", VISIBLE, got) == coder.Feedback(1, 3, None)
    shown = feedback("first_failure", VISIBLE, got)
    assert shown.failure == {"args": [2], "expect": "returns:int:4", "got": "raises:TypeError"}
    assert feedback_text(shown) == ("visible tests passed: 1/3; first failing: args=[2] expected returns:int:4 "
                                    "got raises:TypeError")
    with pytest.raises(ValueError, match="unknown feedback"):
        feedback("everything", VISIBLE, got)


def test_a_short_limit_stops_a_run_before_the_strategy_that_works():
    run = outcomes_by_strategy({"return_none": ["returns:NoneType:None"] * 3, "return_first_arg":
                                ["returns:int:1", "returns:int:2", "returns:int:0"],
                                "delegate": [e["expect"] for e in VISIBLE]})
    short = run_episode(TASK, arm("pass_fraction", 2), 0, VISIBLE, run)
    assert short["status"] == "step_limit" and [a["strategy"] for a in short["attempts"]] == ["return_none",
                                                                                                "return_first_arg"]
    assert short["answer_strategy"] == "return_first_arg"  # 1 of 3 visible beats 0
    long = run_episode(TASK, arm("pass_fraction", 5), 0, VISIBLE, run)
    assert long["status"] == "completed" and long["answer_strategy"] == "delegate" and len(long["attempts"]) == 3


def test_without_shown_failures_it_gives_up_and_with_them_it_memorises_to_a_finish():
    wrong = ["returns:int:-1"] * 3
    run = outcomes_by_strategy({"return_none": wrong, "return_first_arg": wrong, "delegate": wrong})
    # every body fails everything: the base patched is the latest of equals (delegate)
    blind = run_episode(TASK, arm("pass_fraction", 16), 0, VISIBLE, run)
    assert blind["status"] == "gave_up" and len(blind["attempts"]) == 3
    shown = run_episode(TASK, arm("first_failure", 16), 0, VISIBLE, run)
    # the first failure shown (args [1]) is memorised first, then each next one: 3 + 3 attempts
    assert shown["status"] == "completed" and [a["passed"] for a in shown["attempts"]] == [0, 0, 0, 1, 2, 3]
    assert shown["answer_strategy"] == coder.MEMORISE


def test_counts_are_kept_apart_on_hand_built_traces():
    finished = {"status": "completed", "attempts": [{}] * 6, "answer": "def f(x): ..."}
    assert trace_metrics(finished, 4, 6) == {"success": 0.0, "ended_self": 1.0, "hit_limit": 0.0, "tool_calls": 6.0,
                                             "holdout_pass": 4 / 6}  # finished, not solved
    limited = {"status": "step_limit", "attempts": [{}] * 2, "answer": "def f(x): ..."}
    assert trace_metrics(limited, 6, 6) == {"success": 1.0, "ended_self": 0.0, "hit_limit": 1.0, "tool_calls": 2.0,
                                            "holdout_pass": 1.0}  # solved, but stopped by the limit
    assert trace_metrics({"status": "gave_up", "attempts": [], "answer": None}, 0, 6)["success"] == 0.0


def test_usage_counts_every_attempt_turn_as_the_arm_reports_it():
    trace = {"attempts": [{"feedback": "f" * 8, "source": "s" * 12}, {"feedback": "g" * 5, "source": "t" * 3}]}
    native, neutral = load_arm("native", "codemidas"), load_arm("neutral", "codemidas")
    prompt = "p" * 40
    assert usage_of_trace(trace, prompt, neutral) == {"in_tok": 2 + 2, "cached_tok": 2 * 10, "out_tok": 3 + 4 + 1 + 4}
    assert usage_of_trace(trace, prompt, native)["in_tok"] == 4 + 20  # reports input with the cached prompt
    assert tokens("abcde") == 2


def test_the_shipped_codemidas_arms_differ_in_limit_feedback_and_usage():
    native, neutral = load_arm("native", "codemidas"), load_arm("neutral", "codemidas")
    assert (native.max_steps, neutral.max_steps) == (2, 16)
    assert (native.document["feedback"], neutral.document["feedback"]) == ("pass_fraction", "first_failure")
    assert native.cache_included and not neutral.cache_included
    with pytest.raises(ValueError, match="no harness 'nope' for harness_or_model on codemidas; known: native, neutral"):
        load_arm("nope", "codemidas")


def test_it_patches_its_best_body_and_a_run_stopped_by_the_limit_keeps_that_answer():
    wrong = ["returns:int:-1"] * 3
    close = ["returns:int:2", "returns:int:-1", "returns:int:0"]  # 2 of 3 visible
    run = outcomes_by_strategy({"return_none": wrong, "return_first_arg": close, "delegate": wrong})
    shown = run_episode(TASK, arm("first_failure", 16), 0, VISIBLE, run)
    assert [a["passed"] for a in shown["attempts"]] == [0, 2, 0, 3] and shown["status"] == "completed"
    assert "def _twice_attempt(x):" in shown["answer"] and "return x" in shown["answer"]
    limited = run_episode(TASK, arm("pass_fraction", 2), 0, VISIBLE, run)
    assert limited["status"] == "step_limit" and limited["answer_strategy"] == "return_first_arg"
