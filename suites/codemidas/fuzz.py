"""Type-driven fuzz inputs (CodeMidas, "sample"): seeded, deterministic generators of
JSON-able argument values per type, the type assignments to probe for unannotated
parameters, and the sandbox runner that calls a function on the arguments and returns a
canonical text of what happened (a result's canonical repr, and the arguments after the
call where it changed them in place; or the exception's type).

Determinism: every value comes from ``random.Random(f"{seed}:{name}:{index}")`` (a str
seed is hashed with sha512, not with the per-process string hash), and the canonical
text sorts sets by their items' canonical texts, so the same build gives the same tests
in every process."""

from __future__ import annotations

import itertools
import random
from typing import Any

TYPES: tuple[str, ...] = ("int", "str", "float", "list[int]", "list[str]", "bool")
"""The types a parameter may be fuzzed as, in probing order."""
ANNOTATIONS: dict[str, str] = {
    "int": "int", "str": "str", "float": "float", "bool": "bool", "list": "list[int]",
    "list[int]": "list[int]", "List[int]": "list[int]", "list[str]": "list[str]", "List[str]": "list[str]",
}
"""Annotation text -> fuzz type; other annotations are probed like no annotation."""
_ALPHABET = "abcxyz AB01-_.\n\t"


def value(kind: str, rng: random.Random) -> Any:
    """One JSON-able value of fuzz type ``kind``: small ints biased to edge values,
    floats rounded to 3 places, short strings over a mixed alphabet, lists of 0-6 items."""
    if kind == "int":
        return rng.choice((0, 1, -1, 2)) if rng.random() < 0.25 else rng.randint(-40, 200)
    if kind == "float":
        return rng.choice((0.0, 1.0, 0.5)) if rng.random() < 0.25 else round(rng.uniform(-10, 10), 3)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "str":
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 8)))
    if kind in ("list[int]", "list[str]"):
        item = kind[5:-1]
        return [value(item, rng) for _ in range(rng.randint(0, 6))]
    raise ValueError(f"unknown fuzz type {kind!r}; known: {TYPES}")


PROFILES: tuple[str, ...] = ("fuzz", "edge", "small", "large")
"""Input distributions a test writer may draw from: ``fuzz`` is `value`; ``edge`` the
empty/zero/one values; ``small`` tiny magnitudes and lengths; ``large`` big ones."""
_EDGE = {"int": (0, 1, -1), "float": (0.0, 1.0, -1.0), "str": ("", "a", " "), "bool": (False, True)}


def profiled_value(kind: str, rng: random.Random, profile: str) -> Any:
    """One JSON-able value of fuzz type ``kind`` drawn from input distribution ``profile``
    (`PROFILES`); ``fuzz`` is exactly `value`."""
    if profile == "fuzz":
        return value(kind, rng)
    if kind in ("list[int]", "list[str]"):
        length = {"edge": rng.choice((0, 1)), "small": rng.randint(0, 2), "large": rng.randint(7, 12)}[profile]
        return [profiled_value(kind[5:-1], rng, profile) for _ in range(length)]
    if profile == "edge" or kind == "bool":
        return rng.choice(_EDGE[kind])
    if profile == "small":
        return {"int": rng.randint(-3, 3), "float": round(rng.uniform(-2, 2), 1),
                "str": "".join(rng.choice("ab ") for _ in range(rng.randint(0, 2)))}[kind]
    if profile == "large":
        return {"int": rng.randint(300, 5000), "float": round(rng.uniform(100, 5000), 3),
                "str": "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(12, 24)))}[kind]
    raise ValueError(f"unknown input profile {profile!r}; known: {PROFILES}")


def arguments(kinds: tuple[str, ...], seed: int, name: str, count: int) -> list[list[Any]]:
    """``count`` argument lists for a function ``name`` whose parameters have fuzz types
    ``kinds``; the same (kinds, seed, name, count) always gives the same lists, without
    duplicates (up to ``4 * count`` draws)."""
    out, seen = [], set()
    for index in range(4 * count):
        rng = random.Random(f"{seed}:{name}:{','.join(kinds)}:{index}")
        args = [value(kind, rng) for kind in kinds]
        key = repr(args)
        if key not in seen:
            seen.add(key)
            out.append(args)
        if len(out) == count:
            break
    return out


def assignments(annotations: tuple[str | None, ...]) -> list[tuple[str, ...]]:
    """The type assignments to probe: an annotated parameter keeps its type, an
    unannotated one tries every type (the first four when there are three parameters,
    so a probe stays at most 64 assignments)."""
    pool = TYPES if len(annotations) < 3 else TYPES[:4]
    choices = [(ANNOTATIONS[a],) if a in ANNOTATIONS else pool for a in annotations]
    return list(itertools.product(*choices))


RUNNER = r'''import copy


def canonical(value, depth=0):
    """A text that is equal for equal results in any process (sets sorted, no addresses)."""
    if depth > 20:
        raise ValueError("result nested deeper than 20")
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return type(value).__name__ + ":" + repr(value)
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "[" + ", ".join(canonical(v, depth + 1) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return type(value).__name__ + "{" + ", ".join(sorted(canonical(v, depth + 1) for v in value)) + "}"
    if isinstance(value, dict):
        return "dict{" + ", ".join(canonical(k, depth + 1) + ": " + canonical(v, depth + 1) for k, v in value.items()) + "}"
    text = repr(value)
    if " at 0x" in text:
        raise ValueError("result has no stable repr: " + type(value).__name__)
    return type(value).__name__ + ":" + text


def run(fn, payload):
    """Call fn on the case's arguments: the result's canonical text (with the arguments
    after the call when it changed them), or the exception's type."""
    args = copy.deepcopy(payload["args"])
    try:
        result = fn(*args)
    except Exception as exc:
        return {"raises": type(exc).__name__}
    text = canonical(result)
    if args != payload["args"]:  # the function changed its arguments: that is behaviour too
        text += " | args after: " + canonical(args)
    if len(text) > 4000:
        text = text[:4000] + "...(" + str(len(text)) + " chars)"
    return {"returns": text}
'''
"""The sandbox runner: ``run(fn, {"args": [...]}) -> {"returns": text} | {"raises": name}``."""


def outcome(output: Any) -> str | None:
    """The comparable text of a runner output (``returns:...`` or ``raises:Name``); None
    for anything that is not a runner output (a candidate that tampered with it)."""
    if isinstance(output, dict) and len(output) == 1:
        (key, text), = output.items()
        if key in ("returns", "raises") and isinstance(text, str):
            return f"{key}:{text}"
    return None
