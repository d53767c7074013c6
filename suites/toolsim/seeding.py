"""Deterministic randomness for toolsim, built only on primitives whose output is pinned.

Everything random in the simulator is a function of explicit seeds, so a case, a fault
schedule and a grading flip are reproducible from the cases table alone. Seeds are
derived with sha256 (stable across machines and Python versions); draws inside one world
use ``random.Random(int).random()``, the one method whose sequence Python guarantees
across versions, and build choices from it here instead of calling ``choice``/``sample``,
whose algorithms Python may change.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def _digest(parts: tuple[object, ...]) -> bytes:
    text = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(text.encode()).digest()


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (e.g. suite seed, "world", template, index)."""
    return int.from_bytes(_digest(parts)[:8], "big") >> 1


def unit_interval(*parts: object) -> float:
    """A number in [0, 1) that depends only on ``parts``: the fault schedule's draw."""
    return int.from_bytes(_digest(parts)[:8], "big") / 2.0**64


class Draw:
    """Seeded choices for building one world (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def unit(self) -> float:
        return self._random.random()

    def chance(self, p: float) -> bool:
        return self.unit() < p

    def integer(self, low: int, high: int) -> int:
        """Uniform in ``low..high`` inclusive."""
        return low + int(self.unit() * (high - low + 1))

    def choice(self, items: Sequence[T]) -> T:
        return items[int(self.unit() * len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct items, in draw order (a partial Fisher-Yates shuffle)."""
        pool = list(items)
        for i in range(k):
            j = i + int(self.unit() * (len(pool) - i))
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]
