"""CodeMidas's filters on hand-built outcomes: 8 tests, indices 3 and 7 held out."""

from __future__ import annotations

import pytest

from tasks.loops.codemidas.filters import attempts, decide, difficulty, holdout_holds, review, split_of, split_record

EXPECTED = [f"returns:int:{i}" for i in range(8)]
REF = list(EXPECTED)
STUB = ["raises:NotImplementedError"] * 8
NONE = ["returns:NoneType:None"] * 8
FIRST = ["returns:int:0"] * 8  # passes test 0 only
# passes every select test, fails held-out test 7: the tests the gates read let it through
WEAK = EXPECTED[:7] + ["returns:int:99"]
# fails select test 1 only
NEAR = [EXPECTED[0], "returns:int:-1", *EXPECTED[2:]]
GOT = {"reference": REF, "stub": STUB, "return_none": NONE, "return_first_arg": FIRST, "flip_compare_0": WEAK,
       "shift_const_1": NEAR, "retrieval": REF}


def test_every_fourth_test_is_held_out():
    assert [split_of(i) for i in range(8)] == ["select"] * 3 + ["holdout"] + ["select"] * 3 + ["holdout"]


def test_gate1_reads_only_the_select_tests():
    select = split_record(GOT, EXPECTED, "select")
    # 6 select tests; mutants: return_none, return_first_arg, flip_compare_0, shift_const_1 (retrieval left out)
    assert (select["ref_passes"], select["hollow_fails"], select["trivial_killed"]) == (True, True, True)
    assert select["mutants"] == 4 and select["mutants_killed"] == 3  # WEAK survives the select tests
    assert select["mutation_score"] == 0.75 and select["site_mutation_score"] == 0.5
    holdout = split_record(GOT, EXPECTED, "holdout")
    assert holdout["mutants_killed"] == 3  # on tests 3 and 7: NEAR passes both, WEAK fails 7
    assert holdout_holds(holdout)


def test_attempts_carry_rewards_leaks_and_the_reviewers_verdicts():
    rows = {r["solver"]: r for r in attempts(GOT, EXPECTED)}
    assert list(rows) == ["stub", "return_none", "return_first_arg", "flip_compare_0", "shift_const_1", "retrieval"]
    assert rows["return_first_arg"]["select_pass"] == pytest.approx(1 / 6)
    assert rows["shift_const_1"]["select_pass"] == pytest.approx(5 / 6) and rows["shift_const_1"]["holdout_pass"] == 1.0
    assert rows["flip_compare_0"]["passed"] and rows["flip_compare_0"]["reviewer_verdict"] == "false_positive"
    assert rows["retrieval"]["leak_found"] and rows["retrieval"]["reviewer_verdict"] == "pass_confirmed"
    assert not any(r["leak_found"] for name, r in rows.items() if name != "retrieval")
    assert rows["stub"]["reviewer_verdict"] == "fail_confirmed"


def test_review():
    assert review(0.5, 1.0) == "fail_confirmed"
    assert review(1.0, 1.0) == "pass_confirmed"
    assert review(1.0, 0.5) == "false_positive"


def test_difficulty_drops_rewards_without_spread_and_ignores_the_leak_probe():
    def rows(*rewards):
        return [{"solver": f"m{i}", "select_pass": r} for i, r in enumerate(rewards)] + \
            [{"solver": "retrieval", "select_pass": 1.0}]
    assert difficulty(rows(0.0, 0.0, 0.0)) == "every attempt failed it (3 attempts)"
    assert difficulty(rows(1.0, 1.0)) == "every attempt solved it (2 attempts)"
    assert difficulty(rows(0.0, 0.5)) is None
    assert difficulty(rows()) == "no weak-solver attempt"


def test_decide_orders_gate1_then_the_leak_then_gate2():
    select = split_record(GOT, EXPECTED, "select")
    rows = attempts(GOT, EXPECTED)
    assert decide(select, rows, drop_leaky=False) == ("kept", None)
    assert decide(select, rows, drop_leaky=True)[0] == "leak"
    unreliable = split_record({**GOT, "reference": STUB}, EXPECTED, "select")
    assert decide(unreliable, rows, drop_leaky=True) == (
        "gate1", "original does not pass its own tests again (nondeterministic)")
    all_fail = [r for r in rows if r["solver"] in ("stub", "return_none", "retrieval")]
    assert decide(select, all_fail, drop_leaky=False) == ("gate2", "every attempt failed it (2 attempts)")
