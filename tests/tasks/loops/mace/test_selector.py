import random

import pytest

from tasks.loops.mace.memory import Memory, Unit, add_units, pair_key
from tasks.loops.mace.selector import Injection, Limits, arms_of, candidate_sets, choose, joint_key, select, update


def unit(uid, role="lookup", templates=("t",)):
    return Unit(uid, role, "rule", {"id": uid, "trigger": {"before": "list_orders"},
                                    "action": {"paginate": {"max_pages": 10}}}, templates, "")


def memory_with(utilities, n_obs=None, relations=None):
    memory = add_units(Memory(), [unit(uid) for uid in utilities] + [unit("z", role="action")], max_units=16)
    memory.utility.update(utilities)
    memory.n_obs.update(n_obs or {})
    memory.relations.update(relations or {})
    return memory


def test_candidate_sets_drop_risky_units_and_conflicting_pairs_and_rank_by_utility_plus_support():
    memory = memory_with({"a": 0.9, "b": 0.5, "c": 0.6, "d": 0.1}, n_obs={"d": 4},
                         relations={pair_key("a", "c", "conflict"): 0.8, pair_key("a", "c", "support"): 0.2,
                                    pair_key("b", "c", "support"): 0.5})
    sets = candidate_sets(memory, "lookup", "t", Limits(budget=2, max_sets=4, risk_floor=0.2, min_obs=4,
                                                        conflict_margin=0.3))
    # a+b 1.4, b+c 0.5+0.6+0.5 = 1.6, a 0.9, c 0.6, b 0.5; a+c conflicts (0.8 - 0.2 > 0.3); d is risky
    assert sets == [("b", "c"), ("a", "b"), ("a",), ("c",), ()]
    assert candidate_sets(memory, "lookup", "other", Limits()) == [()]
    assert candidate_sets(memory, "action", "t", Limits()) == [("z",), ()]


def test_arms_pair_every_set_with_every_form_and_the_empty_set_with_none():
    assert arms_of([("a",), ()]) == [(("a",), "guideline"), (("a",), "checklist"), (("a",), "constraint"),
                                     ((), "none")]


def test_update_smooths_utilities_and_relations_and_counts_arms():
    memory = memory_with({"a": 0.5, "b": 0.5})
    both = [Injection("lookup", ("a", "b"), "checklist"), Injection("action", (), "none")]
    out = update(memory, [(both, 1.0), ([Injection("lookup", ("a",), "guideline")], 0.0)], smoothing=0.5)
    assert out.utility["a"] == pytest.approx(0.375)  # 0.5 -> 0.75 -> 0.375
    assert out.utility["b"] == pytest.approx(0.75) and out.n_obs["a"] == 2 and out.n_obs["b"] == 1
    assert out.relations == {"a|b|support": 0.5, "a|b|conflict": 0.0}
    assert out.arms[joint_key("lookup", ("a", "b"), "checklist")] == [1.0, 0.0]
    assert out.arms[joint_key("lookup", ("a",), "guideline")] == [0.0, 1.0]
    assert out.arms["form|lookup|checklist"] == [1.0, 0.0] and out.arms["set|action|-"] == [1.0, 0.0]
    assert "form|action|none" not in out.arms
    assert memory.utility["a"] == 0.5  # the input is not changed


def test_joint_arms_capture_a_form_that_depends_on_the_set():
    """Set a is best as a checklist, set b as a guideline: the joint greedy picks (a,
    checklist), and so does joint Thompson sampling most often; the factorised form
    bandit ignores the set (its checklist lead is the same for a and b)."""
    memory = memory_with({"a": 0.5, "b": 0.5})
    for key, counts in {joint_key("lookup", ("a",), "checklist"): [9, 1],
                        joint_key("lookup", ("a",), "guideline"): [1, 9],
                        joint_key("lookup", ("b",), "guideline"): [6, 4],
                        joint_key("lookup", ("b",), "checklist"): [2, 8],
                        "set|lookup|a": [10, 10], "set|lookup|b": [8, 12],
                        "form|lookup|checklist": [11, 9], "form|lookup|guideline": [7, 13]}.items():
        memory.arms[key] = counts
    sets = [("a",), ("b",), ()]
    greedy = choose(memory, "lookup", sets, "joint", random.Random(0), greedy=True)
    assert greedy == Injection("lookup", ("a",), "checklist")
    wins = [choose(memory, "lookup", sets, "joint", random.Random(s)) for s in range(200)]
    assert max(set(wins), key=wins.count) == Injection("lookup", ("a",), "checklist")
    factorised = [choose(memory, "lookup", sets, "factorised", random.Random(s)) for s in range(200)]
    for chosen in (("a",), ("b",)):
        forms = [i.form for i in factorised if i.units == chosen]
        assert forms and max(set(forms), key=forms.count) == "checklist"


def test_select_gives_every_role_one_injection_in_pipeline_order_and_is_seeded():
    memory = memory_with({"a": 0.7})
    first = select(memory, "t", "joint", Limits(), random.Random(3))
    assert [i.role for i in first] == ["intake", "lookup", "action", "verify"]
    assert first == select(memory, "t", "joint", Limits(), random.Random(3))
    assert first[0] == Injection("intake", (), "none")
    greedy = select(memory, "t", "factorised", Limits(), random.Random(0), greedy=True)
    assert greedy[1] == Injection("lookup", ("a",), "guideline")
