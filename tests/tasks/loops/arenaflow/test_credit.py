import pytest

from tasks.loops.arenaflow.credit import (
    Skill, apply_usage, merge_experience, prior, recall, skill_id, step_advantages, utility_delta,
)

OPTS = ("a", "b", "c")


def test_step_advantages_scale_credited_decisions_by_depth():
    assert step_advantages(2.0, [1, 1, 0], OPTS, {"a": 2, "c": 1}, 4, 1.0) == [3.0, 2.0, 2.0]
    assert step_advantages(2.0, [1, 1, 0], OPTS, {"a": 2}, 4, 0.0) == [2.0, 2.0, 2.0]  # no step attribution


def test_negative_advantage_is_never_changed_by_local_labels():
    assert step_advantages(-1.5, [1, 1, 1], OPTS, {"a": 3}, 3, 1.0) == [-1.5, -1.5, -1.5]


def lib(*skills):
    return {s.skill_id: s for s in skills}


def test_recall_by_template_then_utility_top_k():
    s1 = Skill(skill_id("t", "a"), 1, "t", "a", "x", utility=1.0)
    s2 = Skill(skill_id("t", "b"), 1, "t", "b", "x", utility=3.0)
    s3 = Skill(skill_id("t", "c"), 1, "t", "c", "x", utility=5.0, active=False)
    s4 = Skill(skill_id("u", "a"), 1, "u", "a", "x", utility=9.0)
    got = recall(lib(s1, s2, s3, s4), "t", 1, True)
    assert got == [s2]
    assert [s.option for s in recall(lib(s1, s2, s3, s4), "t", 5, True)] == ["b", "a"]
    assert prior(recall(lib(s1, s2), "t", 5, True), OPTS, 2.0) == [2.0, 2.0, 0.0]


def test_utility_delta_and_pruning_after_min_obs():
    assert utility_delta(1.0, True, True) == (1.0, 1)
    assert utility_delta(1.0, True, False) == (0.0, 0)  # a winner's skill not used at a key step
    assert utility_delta(-0.5, True, False) == (-0.5, 1)
    assert utility_delta(-0.5, False, False) == (0.0, 0)
    s = Skill(skill_id("t", "a"), 1, "t", "a", "x")
    library = lib(s)
    assert apply_usage(library, [(s.skill_id, -0.5, 1)] * 2, min_obs=3) == []
    assert library[s.skill_id].utility == pytest.approx(-1.0) and library[s.skill_id].active
    assert apply_usage(library, [(s.skill_id, 0.25, 1)], min_obs=3) == [s.skill_id]
    assert (library[s.skill_id].active, library[s.skill_id].ver, library[s.skill_id].n_obs) == (False, 2, 3)


def test_merge_experience_new_kept_and_revived():
    library = {}
    first = merge_experience(library, "t", ["a"], {"a": "do a"})
    assert [(s.ver, s.text) for s in first] == [(1, "t: do a")]
    assert merge_experience(library, "t", ["a"], {"a": "do a"}) == []  # already active
    sid = skill_id("t", "a")
    library[sid] = Skill(sid, 2, "t", "a", "t: do a", utility=-2.0, n_obs=5, active=False)
    revived = merge_experience(library, "t", ["a"], {"a": "do a"})
    assert [(s.ver, s.active, s.utility, s.n_obs) for s in revived] == [(3, True, 0.0, 0)]
