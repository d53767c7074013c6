"""The frozen "model" of harness_or_model on codemidas: a deterministic coding policy, no
LLM, the same under every harness. It sees a task's stub (signature and docstring), its
module and function name, and the feedback the harness gives after each attempt.

It first proposes whole bodies from a fixed repertoire, in an order its seed fixes (seed
0: the listed order; a later seed: a seeded permutation per task, the same under every
harness): ``return None`` and ``return <first argument>`` (the trivial mutants of
`suites.codemidas.mutants`, written on the stub) and ``delegate`` (that module's
retrieval solver: import the installed original and call it, the suite's known leak).
When the repertoire is spent it revises: where the feedback names a failing visible test
(its input and expected outcome), it patches its best body to answer that input with that
outcome (``memorise``: the visible tests learnt by heart, which the hidden ones punish).
It stops on its own when every visible test passes (finished) or when it has nothing
left to try (gave up). Its answer is its best attempt by visible passes (the latest of
equals). Pure."""

from __future__ import annotations

import ast
import builtins
import json
import random
from dataclasses import dataclass
from typing import Any, Sequence

from suites.codemidas.mutants import retrieval, trivial_mutants

STRATEGIES = ("return_none", "return_first_arg", "delegate")
MEMORISE = "memorise"


@dataclass(frozen=True)
class Feedback:
    """What the harness tells the policy after an attempt: visible tests passed of total,
    and (only where the harness shows it) the first failing one: {args, expect, got}."""

    passed: int
    total: int
    failure: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.passed == self.total


@dataclass(frozen=True)
class Attempt:
    strategy: str
    source: str
    feedback: Feedback


def order(task_id: str, seed_index: int) -> tuple[str, ...]:
    """The repertoire's order under a seed: the listed one at seed 0, else a permutation
    seeded by (task, seed) alone, so every harness sees the same one (paired)."""
    if seed_index == 0:
        return STRATEGIES
    return tuple(random.Random(f"harness_or_model:{task_id}:{seed_index}").sample(STRATEGIES, len(STRATEGIES)))


def repertoire(task: dict[str, Any]) -> dict[str, str]:
    """The whole bodies the policy can write for a shipped task, by strategy."""
    bodies = {m.name: m.source for m in trivial_mutants(task["stub"])}
    return {**bodies, "delegate": retrieval(task["module"], task["name"], len(task["kinds"]))}


def value_of(canonical: str) -> Any:
    """The Python value whose runner text (`suites.codemidas.fuzz` ``canonical``) is
    ``canonical``, for scalars and lists/tuples of them; ValueError for anything else (a
    set, a dict, a truncated text, a result that changed its arguments)."""
    value, end = _parse(canonical, 0)
    if end != len(canonical):
        raise ValueError(f"trailing text in {canonical[:40]!r}")
    return value


def _parse(text: str, i: int) -> tuple[Any, int]:
    for kind, build in (("list", list), ("tuple", tuple)):
        if text.startswith(kind + "[", i):
            i, items = i + len(kind) + 1, []
            while not text.startswith("]", i):
                item, i = _parse(text, i)
                items.append(item)
                i += 2 if text.startswith(", ", i) else 0
            return build(items), i + 1
    colon = text.find(":", i)
    if colon < 0:
        raise ValueError(f"no scalar at {text[i:i + 40]!r}")
    name, j = text[i:colon], colon + 1
    if name in ("str", "bytes"):
        start = j + (name == "bytes")
        quote, k = text[start], start + 1
        while text[k] != quote:
            k += 2 if text[k] == "\\" else 1
        end = k + 1
    else:
        end = min([p for p in (text.find(",", j), text.find("]", j)) if p >= 0] or [len(text)])
    value = ast.literal_eval(text[j:end])
    if type(value).__name__ != name:
        raise ValueError(f"{text[j:end]!r} is not a {name}")
    return value, end


def statement_of(expect: str) -> str | None:
    """The statement that produces an expected outcome (``returns:...`` or ``raises:Name``),
    None when the policy cannot write it."""
    kind, _, text = expect.partition(":")
    if kind == "raises":
        found = getattr(builtins, text, None)
        return f"raise {text}()" if isinstance(found, type) and issubclass(found, Exception) else None
    try:
        return f"return {value_of(text)!r}"
    except (ValueError, SyntaxError, IndexError):
        return None


def memorised(base: str, name: str, failures: Sequence[dict[str, Any]]) -> str:
    """``base`` (a function ``name``) answering each failure's input with its expected
    outcome and every other input as before."""
    node = ast.parse(base).body[0]
    node.name = f"_{name}_attempt"
    lines = [ast.unparse(node), "", "", f"def {name}(*args):", "    key = repr(list(args))"]
    for failure in failures:
        lines += [f"    if key == {repr(failure['args'])!r}:", f"        {statement_of(failure['expect'])}"]
    return "\n".join(lines + [f"    return _{name}_attempt(*args)", ""])


def best(history: Sequence[Attempt], strategies: Sequence[str] = ()) -> Attempt:
    """The attempt with the most visible passes (the latest of equals), among
    ``strategies`` when given."""
    pool = [a for a in history if not strategies or a.strategy in strategies]
    return max(reversed(pool), key=lambda a: a.feedback.passed)


def propose(task: dict[str, Any], ordered: Sequence[str], history: Sequence[Attempt]) -> tuple[str, str] | None:
    """(strategy, source) of the next attempt, or None: the policy stops here."""
    if history and history[-1].feedback.finished:
        return None
    tried = {a.strategy for a in history}
    bodies = repertoire(task)
    for strategy in ordered:
        if strategy not in tried:
            return strategy, bodies[strategy]
    failures = writable_failures(history)
    if not failures or (history[-1].strategy == MEMORISE and len(failures) == len(writable_failures(history[:-1]))):
        return None  # nothing shown it can write, or nothing new since its last patch: it gives up
    return MEMORISE, memorised(best(history, ordered).source, task["name"], failures)


def writable_failures(history: Sequence[Attempt]) -> list[dict[str, Any]]:
    """The failing visible tests the feedback has shown, each input once, whose expected
    outcome the policy can write (see `statement_of`), in the order shown."""
    out, seen = [], set()
    for attempt in history:
        failure = attempt.feedback.failure
        key = json.dumps(failure["args"]) if failure else None
        if failure and key not in seen and statement_of(failure["expect"]):
            seen.add(key)
            out.append(failure)
    return out


def answer(history: Sequence[Attempt]) -> Attempt | None:
    """The attempt the policy submits: its best by visible passes (None: no attempt)."""
    return best(history) if history else None
