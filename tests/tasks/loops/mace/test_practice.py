import random

from suites.toolsim.suite import ToolSim
from tasks.loops.mace.memory import Memory
from tasks.loops.mace.practice import co_learn_round, role_outputs, step_role, success_on
from tasks.loops.mace.selector import Limits


def train_cases():
    return [c for c in ToolSim(instances_per_template=5).cases() if c.split == "train"]


def test_step_roles():
    assert step_role({"kind": "check", "name": "get_order"}) == "verify"
    assert step_role({"kind": "tool_call", "name": "find_user_by_email"}) == "intake"
    assert step_role({"kind": "tool_call", "name": "list_orders"}) == "lookup"
    assert step_role({"kind": "tool_call", "name": "cancel_order"}) == "action"


def test_a_round_mines_units_from_its_logs_and_its_feedback_moves_the_memory():
    cases = train_cases()
    first = co_learn_round(Memory(), cases, "joint", Limits(), 0.3, 48, random.Random(0))
    assert len(first.attempts) == len(cases) and first.memory.units  # mined from the failures
    second = co_learn_round(first.memory, cases, "joint", Limits(), 0.3, 48, random.Random(1))
    used = {u for a in second.attempts for inj in a.injections for u in inj.units}
    assert used and all(second.memory.n_obs[u] >= 1 for u in used)
    joint = [v for k, v in second.memory.arms.items() if k.startswith("joint|")]
    assert sum(sum(v) for v in joint) == 2 * 4 * len(cases)  # 4 roles a request, 2 rounds
    frozen = co_learn_round(first.memory, cases, "joint", Limits(), 0.3, 48, random.Random(1), feedback=False)
    assert frozen.memory is first.memory
    outputs = role_outputs(second.attempts[0].episode)
    assert sum(len(v) for v in outputs.values()) == len(second.attempts[0].episode.steps)


def test_greedy_success_is_deterministic_and_the_empty_memory_is_the_seed_harness():
    cases = train_cases()
    assert success_on(Memory(), cases, Limits(), "joint") == success_on(Memory(), cases, Limits(), "factorised")
    assert set(success_on(Memory(), cases, Limits(), "joint").values()) <= {0.0, 1.0}
