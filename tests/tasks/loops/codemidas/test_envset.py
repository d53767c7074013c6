"""The environment set: content id, merge, the next candidates of the pool."""

from __future__ import annotations

from schemas.ids import content_id
from tasks.loops.codemidas.envset import EMPTY, dump, merged, next_candidates, set_id


def env(task_id: str) -> dict:
    return {"task_id": task_id, "tests": [{"args": [1], "expect": "returns:int:1", "split": "select"}]}


def test_the_id_is_the_sha256_of_the_canonical_text_whatever_the_key_order():
    a = {"seen": ["m::f"], "environments": [env("m::f")]}
    b = {"environments": [env("m::f")], "seen": ["m::f"]}
    assert set_id(a) == set_id(b) == content_id(dump(a))
    assert set_id(a) != set_id(EMPTY)


def test_merge_adds_new_environments_once_and_remembers_every_built_candidate():
    first = merged(EMPTY, [env("m::b")], ["m::b", "m::a"])
    assert [e["task_id"] for e in first["environments"]] == ["m::b"] and first["seen"] == ["m::a", "m::b"]
    second = merged(first, [env("m::c"), env("m::b")], ["m::c", "m::b"])
    assert [e["task_id"] for e in second["environments"]] == ["m::b", "m::c"]
    assert second["seen"] == ["m::a", "m::b", "m::c"]
    assert merged(second, [], []) == second and set_id(merged(second, [], [])) == set_id(second)


def test_next_candidates_skip_what_was_built_in_pool_order():
    pool = ["a::1", "a::2", "b::1", "b::2"]
    assert next_candidates(pool, [], 3) == ["a::1", "a::2", "b::1"]
    assert next_candidates(pool, ["a::2", "a::1"], 3) == ["b::1", "b::2"]
    assert next_candidates(pool, pool, 3) == []
