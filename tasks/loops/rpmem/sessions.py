"""RPMem's arith sessions: a user's preferences are key -> digit values that sessions
set, change and invalidate, and questions ask each key's current value. Pure and
seeded: a user's sessions are a function of (seed, split, user index).

A session is ``;``-joined updates over the arith tokenizer's alphabet:

- ``set k v``: key ``k`` had no value, now ``v``;
- ``chg k v``: key ``k`` had a value, now another one ``v``;
- ``del k``:   key ``k`` is invalidated (no value: the answer is ``n``).

After every session each key is asked (``get k``); the answer is its value or ``n``."""

from __future__ import annotations

import random
from dataclasses import dataclass

from schemas.ids import seed_for

NONE = "n"
"""The answer of a key without a value (never set, or invalidated)."""
DIGITS = "0123456789"
ANSWERS = DIGITS + NONE
"""Every answer a question can have."""


@dataclass(frozen=True)
class Session:
    """One session: its text and the state (key -> value) after it."""

    text: str
    state: tuple[tuple[str, str], ...]

    def answer(self, key: str) -> str:
        return dict(self.state).get(key, NONE)


def keys_of(n_keys: int) -> str:
    """The keys a user may hold: the first `n_keys` letters from ``a``."""
    if not 1 <= n_keys <= 12:
        raise ValueError(f"n_keys={n_keys}: a user holds 1 to 12 keys (a..l)")
    return "abcdefghijkl"[:n_keys]


def question(key: str) -> str:
    return f"get {key}"


def update(state: dict[str, str], rng: random.Random, keys: str, p_delete: float) -> str:
    """One update applied to `state` in place; returns its text."""
    key = rng.choice(keys)
    if key not in state:
        state[key] = rng.choice(DIGITS)
        return f"set {key} {state[key]}"
    if rng.random() < p_delete:
        del state[key]
        return f"del {key}"
    state[key] = rng.choice([d for d in DIGITS if d != state[key]])
    return f"chg {key} {state[key]}"


def user_sessions(seed: int, split: str, user: int, n_sessions: int, updates: int, keys: str,
                  p_delete: float = 0.2) -> list[Session]:
    """The `n_sessions` sessions of one user in time order, each of `updates` updates."""
    rng = random.Random(seed_for(seed, "rpmem", split, user))
    state: dict[str, str] = {}
    out = []
    for _ in range(n_sessions):
        text = ";".join(update(state, rng, keys, p_delete) for _ in range(updates))
        out.append(Session(text, tuple(sorted(state.items()))))
    return out


def user_id(split: str, user: int) -> str:
    return f"{split}-{user:04d}"
