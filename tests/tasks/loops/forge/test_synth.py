"""FORGE's four generators and the verifier on the real toolsim simulation."""

import random

import pytest

from suites.toolsim.backend import PAGE_SIZE
from suites.toolsim.suite import ToolSim
from suites.toolsim.templates import get_template
from tasks.loops.forge.modes import FailureMode, mode_id, signature
from tasks.loops.forge.synth import DISTRACTOR_RATE, STRATEGIES, generate, oracle_edits, run_trace, verify

SEED = {"version": 1, "rules": [], "skills": []}
CASES = {c.case_id: c for c in ToolSim(instances_per_template=5).cases()}


def source(case_id="cancel_latest_order/000"):
    return CASES[case_id].payload


def test_generators_change_what_their_strategy_names():
    payload = source()
    same = generate(payload, "same_failure", 1)
    assert same["template"] == payload["template"] and same["fault_rate"] == payload["fault_rate"]
    assert same["world_seed"] != payload["world_seed"] and same["noise_seed"] != payload["noise_seed"]
    assert same["params"] == get_template(payload["template"]).build(same["world_seed"]).request
    counter = generate(payload, "counter_example", 1)
    assert counter["version"] == 2 and counter["world_seed"] == payload["world_seed"]
    distract = generate(payload, "distractor", 1)
    assert distract["fault_rate"] == pytest.approx(payload["fault_rate"] + DISTRACTOR_RATE)
    assert {**distract, "fault_rate": payload["fault_rate"]} == payload
    boundary = generate(payload, "boundary", 1)
    scenario = get_template(payload["template"]).build(boundary["world_seed"])
    user = scenario.world.orders[scenario.hidden["order_id"]].user_id
    assert len(scenario.world.orders_of(user)) % PAGE_SIZE == 0
    assert generate(payload, "same_failure", 1) == same and generate(payload, "same_failure", 2) != same
    with pytest.raises(ValueError):
        generate(payload, "paraphrase", 1)
    assert len(STRATEGIES) == 4


def test_verifier_admits_only_solvable_instances_that_show_the_mode():
    failing = [(cid, c.payload) for cid, c in CASES.items() if not run_trace(cid, c.payload, SEED).success]
    cid, payload = failing[0]
    sig = signature(run_trace(cid, payload, SEED))
    mode = FailureMode(mode_id(sig), sig, "", (payload["template"],), ("t",))
    used, calls, first = oracle_edits(cid, payload, SEED, random.Random(0))
    check = verify(cid, payload, mode, "same_failure", SEED, 0)
    assert check.targets_mode and check.exhibited == sig and check.calls == calls
    assert check.valid == (used is not None) and (used is None or used >= 1)
    counter = verify(cid, payload, mode, "counter_example", SEED, 0)
    assert not counter.targets_mode  # the current rules show the mode: no counter-example
    other = FailureMode(mode_id(("x", "y", "z", "w")), ("x", "y", "z", "w"), "", (), ())
    assert not verify(cid, payload, other, "same_failure", SEED, 0).targets_mode


def test_an_instance_the_rules_already_solve_needs_no_oracle_edit():
    cid, payload = next((cid, c.payload) for cid, c in CASES.items() if run_trace(cid, c.payload, SEED).success)
    used, calls, first = oracle_edits(cid, payload, SEED, random.Random(0))
    assert (used, calls, first.success) == (0, 1, True)


def test_synthesize_draws_from_training_sources_and_skips_what_it_has_seen():
    from tasks.loops.forge.synth import synthesize

    train = {cid: c.payload for cid, c in CASES.items() if c.split == "train"}
    cid = next(i for i, p in train.items() if not run_trace(i, p, SEED).success)
    sig = signature(run_trace(cid, train[cid], SEED))
    mode = FailureMode(mode_id(sig), sig, "", (train[cid]["template"],), ("t-unknown", "t1"))
    seen = set(train)
    made = synthesize([mode], train, {"t1": cid}, SEED, ("same_failure", "distractor"), 2, 0, 0, seen)
    assert {m.source_id for m in made} == {cid} and {m.strategy for m in made} == {"same_failure", "distractor"}
    assert len(made) == 3  # the distractor is the same instance both times: made once
    assert {m.inst_id for m in made} <= seen
    assert synthesize([mode], train, {"t1": cid}, SEED, ("distractor",), 1, 0, 0, seen) == []
    assert all(m.admitted == (m.check.valid and m.check.targets_mode) for m in made)
