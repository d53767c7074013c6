"""LIMBO's stream and one policy's pass on real toolsim episodes, at a tiny size: the
stream is deterministic and paired across policies, only successes enter memory, and
only the chosen arm runs."""

import pytest

from schemas.limbo import LimboConfig
from suites.toolsim.suite import ToolSim
from tasks.loops.limbo.agent import run_request
from tasks.loops.limbo.memory import SEED, arm_of
from tasks.loops.limbo.stream import initial_state, play, state_of, stream

CONFIG = LimboConfig(capacity=3, window=4)


@pytest.fixture(scope="module")
def requests():
    cases = [c for c in ToolSim(instances_per_template=2).cases() if c.split == "train"]
    return stream(cases, 24, CONFIG.fault_rates, 0)


def test_the_stream_is_deterministic_and_injects_failures(requests):
    cases = [c for c in ToolSim(instances_per_template=2).cases() if c.split == "train"]
    again = stream(cases, 24, CONFIG.fault_rates, 0)
    assert [(r.task_id, r.case.payload) for r in again] == [(r.task_id, r.case.payload) for r in requests]
    assert {r.case.payload["fault_rate"] for r in requests} <= set(CONFIG.fault_rates)
    assert len({r.case.payload["fault_rate"] for r in requests}) > 1
    assert len({r.case.payload["noise_seed"] for r in requests}) == 24


def test_a_lean_arm_makes_one_attempt_and_a_full_arm_may_repair(requests):
    for r in requests:
        lean = run_request(r.case, arm_of("none-lean"), SEED, 0, __import__("random").Random(0))
        assert lean.turns_used == 1 and len(lean.episode.steps) <= 12
        full = run_request(r.case, arm_of("none-full"), SEED, 0, __import__("random").Random(0))
        assert full.success >= lean.success or full.turns_used == 1


def test_only_successes_enter_memory_and_capacity_holds(requests):
    state = initial_state(CONFIG, "none-full")
    steps = play(requests, "none-full", state, CONFIG, 0)
    admitted = [s for s in steps if s.entry is not None]
    assert admitted and all(s.outcome.success for s in admitted)
    assert all(s.entry is None for s in steps if not s.outcome.success)
    assert len(state.memory) == min(3, len(admitted))
    assert [e.t_added for e in state.memory] == [s.request.t for s in admitted][-3:]
    assert set(state.evicted) == {s.entry.entry for s in admitted[:-3]}


def test_the_controller_runs_one_arm_per_request_and_resumes_from_its_state(requests):
    whole = play(requests, None, initial_state(CONFIG, None), CONFIG, 0)
    assert all(s.choice is not None and s.arm == s.choice.arm for s in whole)
    state = initial_state(CONFIG, None)
    first = play(requests[:10], None, state, CONFIG, 0)
    rest = play(requests[10:], None, state_of(state.as_json(), CONFIG), CONFIG, 0)
    assert [(s.arm, s.outcome.tokens, s.mem_ver) for s in first + rest] == \
        [(s.arm, s.outcome.tokens, s.mem_ver) for s in whole]
    assert sum(h.pulls for h in state_of(state.as_json(), CONFIG).controller.heads.values()) == 10


def test_a_repair_spends_a_turn_and_its_generation_tokens(requests):
    import random

    from tasks.loops.limbo.agent import attempt_tokens

    failed = next(r for r in requests
                  if not run_request(r.case, arm_of("none-full"), SEED, 0, random.Random(0), lambda *a: None).success)
    seen = []

    def nothing(trace, harness, rng):
        seen.append((trace.case_id, dict(harness)))
        return None

    out = run_request(failed.case, arm_of("none-full"), SEED, 7, random.Random(0), nothing)
    assert seen == [(failed.case.case_id, SEED)] and out.turns_used == 1 and not out.success
    assert out.tokens == attempt_tokens(out.episode, 7) + arm_of("none-full").gen_len


def test_the_llm_repair_brief_is_the_prompt_file_filled_in(requests):
    from suites.toolsim.episode import run_episode
    from suites.toolsim.harness import load_harness
    from tasks.loops.limbo.llm import repair_brief
    from tasks.proposers.rule_evidence import trace_of

    case = requests[0].case
    text = repair_brief(trace_of(case.case_id, case.payload, run_episode(case.payload, load_harness(SEED))))
    assert text.startswith("You are a budgeted toolsim customer-service agent")
    assert f"Template: {case.payload['template']}" in text and "{" not in text.split("Trajectory")[0][-40:]


def test_the_real_models_repair_answer_is_no_repair_that_keeps_its_call(requests, chat_endpoint):
    """The served 0.5B model answered a repair with ``SEARCH/REPLACE: def harness(): ...``
    and no block: no repair, and the repairer keeps why with the call's raw answer and
    tokens for the block's ``llm_unusable`` candidate."""
    import random

    from schemas.configs import EvolveConfig
    from suites.toolsim.episode import run_episode
    from suites.toolsim.harness import load_harness
    from tasks.loops.limbo.llm import llm_repairer
    from tasks.proposers.rule_evidence import trace_of

    answer = "SEARCH/REPLACE: def harness():\n    return {'rules': [], 'skills': [], 'version': 1}"
    chat_endpoint.answers.append(answer)
    case = requests[0].case
    repair = llm_repairer(EvolveConfig())
    trace = trace_of(case.case_id, case.payload, run_episode(case.payload, load_harness(SEED)))
    assert repair(trace, SEED, random.Random(0)) is None
    ((parent, why),) = repair.refused
    assert str(why).startswith("the llm's answer is not a valid harness") and len(parent) == 64
    assert (why.proposal.answer, why.proposal.tokens_in, why.proposal.tokens_out) == (answer, 10, 5)
