import random

import pytest

from tasks.loops.rpmem.sessions import NONE, Session, keys_of, update, user_sessions


def test_update_sets_changes_and_invalidates():
    state: dict[str, str] = {}
    rng = random.Random(3)
    texts = [update(state, rng, "a", p_delete=0.5) for _ in range(12)]
    replay: dict[str, str] = {}
    for text in texts:  # replaying the texts gives the same state, and each op is legal where it occurs
        op, *rest = text.split(" ")
        if op == "set":
            assert "a" not in replay
            replay["a"] = rest[1]
        elif op == "chg":
            assert replay["a"] != rest[1]
            replay["a"] = rest[1]
        else:
            assert op == "del" and "a" in replay
            del replay["a"]
    assert replay == state
    assert {t.split(" ")[0] for t in texts} == {"set", "chg", "del"}


def test_user_sessions_are_seeded_and_states_follow_the_updates():
    a = user_sessions(0, "select", 2, 5, 3, "abc")
    assert a == user_sessions(0, "select", 2, 5, 3, "abc")
    assert a != user_sessions(0, "holdout", 2, 5, 3, "abc")
    state: dict[str, str] = {}
    for s in a:
        for u in s.text.split(";"):
            op, key, *value = u.split(" ")
            if op == "del":
                state.pop(key)
            else:
                state[key] = value[0]
        assert dict(s.state) == state


def test_answer_of_an_unset_key_is_none():
    s = Session("set a 3", (("a", "3"),))
    assert s.answer("a") == "3" and s.answer("b") == NONE


def test_keys_of_bounds():
    assert keys_of(3) == "abc"
    with pytest.raises(ValueError, match="n_keys=13"):
        keys_of(13)
