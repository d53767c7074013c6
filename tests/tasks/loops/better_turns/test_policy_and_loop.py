"""The behaviour-cloned policy and its closed-loop run on real toolsim cases."""

import json

import numpy as np
import pytest

from suites.toolsim import ToolSim
from suites.toolsim.episode import run_episode
from tasks.loops.better_turns.closed_loop import calls_of, ids_grounded, run_closed_loop
from tasks.loops.better_turns.history import reference_turns
from tasks.loops.better_turns.policy import Policy, mean_loss, train
from tasks.loops.better_turns.stages import reference_harness

EXAMPLES = [(["a"], "x"), (["b"], "y")] * 4


def test_sgd_fits_two_contexts_and_lowers_the_loss_each_epoch():
    start = Policy.initial(EXAMPLES, seed=0)
    assert start.features == ("a", "b", "bias") and start.labels == ("x", "y")
    fitted, losses = train(start, EXAMPLES, epochs=5, lr=1.0, batch_size=2, seed=0)
    assert mean_loss(start, EXAMPLES) == pytest.approx(np.log(2), abs=0.02)  # near-uniform start
    assert losses[0] < np.log(2)  # an epoch's loss is taken batch by batch, as it learns
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert mean_loss(fitted, EXAMPLES) < 0.3
    assert fitted.probabilities(["a"])[0] > 0.8 and fitted.probabilities(["b"])[1] > 0.8


def test_weights_round_trip_and_the_same_seed_gives_the_same_bytes():
    one, _ = train(Policy.initial(EXAMPLES, 3), EXAMPLES, 2, 0.5, 3, 3)
    two, _ = train(Policy.initial(EXAMPLES, 3), EXAMPLES, 2, 0.5, 3, 3)
    assert one.to_bytes() == two.to_bytes()
    back = Policy.from_bytes(one.to_bytes())
    assert back.labels == one.labels and np.array_equal(back.weights, one.weights)
    with pytest.raises(ValueError, match="vocabulary"):
        train(one, [(["a"], "z")], 1, 0.5, 1, 0)


@pytest.fixture(scope="module")
def case_and_reference():
    case = next(c for c in ToolSim(instances_per_template=1).cases() if c.payload["template"] == "cancel_latest_order")
    return case, run_episode(case.payload, reference_harness())


def test_a_policy_that_memorised_the_reference_completes_it_in_closed_loop(case_and_reference):
    case, episode = case_and_reference
    assert episode.evaluation.success
    turns = reference_turns("cancel_latest_order", case.payload["params"], episode.steps)
    examples = [(t.features, t.action.label()) for t in turns]
    policy, _ = train(Policy.initial(examples, 0), examples, 60, 1.0, 4, 0)
    run = run_closed_loop(policy, case.payload, episode.steps, retries=3)
    assert calls_of(run.steps) == calls_of(episode.steps)
    assert (run.status, run.completed, run.holistic) == ("stopped", True, True)
    assert run.retries == sum(not s["ok"] for s in episode.steps)


def test_an_untrained_policy_neither_completes_nor_reaches_the_goal(case_and_reference):
    case, episode = case_and_reference
    turns = reference_turns("cancel_latest_order", case.payload["params"], episode.steps)
    policy = Policy.initial([(t.features, t.action.label()) for t in turns], 0)
    run = run_closed_loop(policy, case.payload, episode.steps, retries=0)
    assert not run.completed and not run.goal_ok


def test_an_id_no_result_gave_is_not_grounded():
    found = {"step": 0, "kind": "tool_call", "name": "get_order", "args_json": json.dumps({"order_id": "o1"}),
             "result_json": json.dumps({"result": {"order_id": "o1", "user_id": "u7"}}), "ok": True}
    uses = dict(found, args_json=json.dumps({"user_id": "u7"}))
    invented = dict(found, args_json=json.dumps({"user_id": "u8"}))
    assert ids_grounded([found, uses], {"order_id": "o1"})
    assert not ids_grounded([found, invented], {"order_id": "o1"})
    assert not ids_grounded([found], {})


def test_the_reference_agent_serves_every_request_so_every_gold_history_completes():
    harness = reference_harness()
    assert all(run_episode(c.payload, harness).evaluation.success for c in ToolSim().cases())
