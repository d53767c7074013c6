import json
import math

import pytest

from tasks.loops.arenaflow.arena import (
    Trajectory, advantages, compare, credited_options, key_steps, knockout, rank_key, survival_depths, used_options,
)

OPTS = ("retry-transient", "paginate-orders")


def step(name, args, ok=True, via="default:t", kind="tool_call"):
    return {"kind": kind, "name": name, "args_json": json.dumps(args), "ok": ok,
            "result_json": json.dumps({"result": {}, "via": via})}


CANCEL = step("cancel_order", {"order_id": "o1"})
READ = step("get_order", {"order_id": "o1"})
FAILED_CANCEL = step("cancel_order", {"order_id": "o1"}, ok=False)
RETRIED = step("cancel_order", {"order_id": "o1"}, via="retry-transient")


def test_rank_key_orders_success_then_met_then_errors_then_calls():
    a = Trajectory("a", True, 1, (READ, CANCEL))
    b = Trajectory("b", False, 2, (READ,))
    c = Trajectory("c", True, 1, (READ, FAILED_CANCEL, CANCEL))
    d = Trajectory("d", True, 1, (READ, READ, CANCEL))
    assert rank_key(a) > rank_key(d) > rank_key(c) > rank_key(b)


def test_key_steps_are_winner_writes_the_loser_lacks():
    win = Trajectory("w", True, 1, (READ, FAILED_CANCEL, RETRIED))
    lose = Trajectory("l", False, 0, (READ, FAILED_CANCEL))
    assert key_steps(win, lose) == (2,)  # reads and failed calls are not state changes
    assert key_steps(win, Trajectory("x", True, 1, (CANCEL,))) == ()  # same tool and args
    assert used_options(win, 2, OPTS) == ("retry-transient",)
    assert used_options(win, 1, OPTS) == ()


def test_compare_tie_goes_to_first_and_records_used_options():
    a, b = Trajectory("a", True, 1, (CANCEL,)), Trajectory("b", True, 1, (CANCEL,))
    m = compare(a, b, 1, OPTS)
    assert (m.winner, m.key_steps, m.round) == ("a", (), 1)
    win = Trajectory("w", True, 1, (FAILED_CANCEL, RETRIED))
    m = compare(Trajectory("l", False, 0, (FAILED_CANCEL,)), win, 2, OPTS)
    assert (m.winner, m.key_steps, m.used) == ("w", (1,), {1: ("retry-transient",)})


def test_knockout_scores_advantages_and_survival_depth():
    champ = Trajectory("c", True, 1, (FAILED_CANCEL, RETRIED))
    lose = [Trajectory(f"l{i}", False, 0, (READ,)) for i in range(3)]
    # bracket: (c, l0) then (l1, l2); final c vs l1
    tour = knockout([champ, lose[0], lose[1], lose[2]], OPTS)
    assert tour.rounds == 2 and tour.champion == "c"
    assert tour.scores == {"l0": 1, "l2": 1, "l1": 2, "c": 3}
    adv = advantages(tour)
    mean, std = 7 / 4, math.sqrt(((1 - 1.75) ** 2 * 2 + (2 - 1.75) ** 2 + (3 - 1.75) ** 2) / 4)
    assert adv["c"] == pytest.approx((3 - mean) / std)
    assert adv["l0"] == pytest.approx((1 - mean) / std)
    assert sum(adv.values()) == pytest.approx(0.0)
    assert survival_depths(tour)["c"] == {1: 2}  # found in round 1, re-confirmed in the final
    assert survival_depths(tour)["l1"] == {}  # l1 beat l2 on a tie: no key step
    assert credited_options(tour)["c"] == {"retry-transient": 2}


def test_knockout_bye_and_all_equal_group():
    ts = [Trajectory(x, False, 0, (READ,)) for x in "abc"]
    tour = knockout(ts, OPTS)
    assert tour.scores == {"b": 1, "c": 2, "a": 3} and len(tour.matches) == 2
    flat = knockout([ts[0]], OPTS)
    assert flat.scores == {"a": 1} and advantages(flat) == {"a": 0.0}
