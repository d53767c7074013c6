"""codemidas tasks as CoVer problems, pure. A problem holds the original, its mutants
grouped by mutation operator (the code role's actions; ``original`` applies none), the
frozen GT tests (the task's shipped tests, split train/select/holdout as the suite does)
and one pool of inputs per input generator (the test role's actions: a test's input is
drawn from its generator's pool; with `proposer: llm` one more generator, ``llm``, whose
pool the chat endpoint wrote). `Problem.runs` lists every (program, inputs) pair the
execute stage runs in the sandbox; `Problem.outcomes` holds what came back."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from schemas.ids import content_id
from suites.codemidas import fuzz
from suites.codemidas.mutants import TRIVIAL, all_mutants

OPERATORS = ("original", "return_none", "return_first_arg", "flip_compare", "swap_binop", "shift_const")
GENERATORS = fuzz.PROFILES
"""The offline input generators; `generators_for` adds ``llm`` on the llm path."""
LLM = "llm"
SPLITS = ("train", "train", "select", "holdout")
"""A GT test's split by its index i: SPLITS[i % 4], as in `suites.codemidas.suite`."""


def operator_of(mutant_name: str) -> str:
    """The mutation operator of a `suites.codemidas.mutants` name (``flip_compare_3``)."""
    return mutant_name if mutant_name in TRIVIAL else mutant_name.rsplit("_", 1)[0]


@dataclass
class Problem:
    task_id: str
    entrypoint: str
    sources: list[str]
    """Program sources: the original first, then every mutant."""
    operators: list[str]
    """Each source's operator."""
    gt: list[dict]
    """The frozen GT tests: {"args", "expect", "split"}."""
    pools: dict[str, list[list]]
    """Per generator, its input argument lists."""
    generators: tuple[str, ...] = GENERATORS
    """The test role's actions, in the test policy's order."""
    outcomes: dict[str, list[str | None]] = field(default_factory=dict)
    """Per program content id, its outcome on every GT test then every pool input."""

    @property
    def ids(self) -> list[str]:
        return [content_id(s) for s in self.sources]

    def programs_of(self, operator: str) -> list[int]:
        return [i for i, op in enumerate(self.operators) if op == operator]

    def inputs(self) -> list[list]:
        """Every argument list a program is run on: the GT tests, then each pool in order."""
        return [t["args"] for t in self.gt] + [a for g in self.generators for a in self.pools[g]]

    def input_offset(self, generator: str, index: int) -> int:
        before = self.generators[:self.generators.index(generator)]
        return len(self.gt) + sum(len(self.pools[g]) for g in before) + index

    def gt_pass(self, program: int, split: str) -> float:
        """The program's pass fraction on the GT tests of ``split`` (train: the code reward)."""
        got = self.outcomes[self.ids[program]]
        mine = [i for i, t in enumerate(self.gt) if t["split"] == split]
        return sum(got[i] == self.gt[i]["expect"] for i in mine) / len(mine)

    def outcome(self, program: int, generator: str, index: int) -> str | None:
        return self.outcomes[self.ids[program]][self.input_offset(generator, index)]


def generators_for(proposer: str) -> tuple[str, ...]:
    """The test role's actions of a run: the fuzz profiles, and ``llm`` on the llm path."""
    return GENERATORS + (LLM,) if proposer == "llm" else GENERATORS


def problem(task: dict, seed: int, pool_size: int, llm_pool: list[list] | None = None) -> Problem:
    """A shipped codemidas task as a problem; the pools are seeded per (seed, task,
    generator). ``llm_pool`` (the endpoint's argument lists; may be empty) adds the
    ``llm`` generator."""
    mutants = all_mutants(task["reference"])
    pools = {}
    for g in GENERATORS:
        pool, seen = [], set()
        for i in range(4 * pool_size):
            rng = random.Random(f"{seed}:{task['task_id']}:{g}:{i}")
            args = [fuzz.profiled_value(k, rng, g) for k in task["kinds"]]
            if json.dumps(args) not in seen and len(pool) < pool_size:
                seen.add(json.dumps(args))
                pool.append(args)
        pools[g] = pool
    gt = [{"args": t["args"], "expect": t["expect"], "split": SPLITS[i % 4]} for i, t in enumerate(task["tests"])]
    generators = GENERATORS
    if llm_pool is not None:
        pools[LLM], generators = [list(a) for a in llm_pool[:pool_size]], GENERATORS + (LLM,)
    return Problem(task["task_id"], task["name"], [task["reference"]] + [m.source for m in mutants],
                   ["original"] + [operator_of(m.name) for m in mutants], gt, pools, generators=generators)


def input_key(args: list) -> str:
    """The canonical text of a test's input (the duplicate filter's key)."""
    return json.dumps(args, sort_keys=True)
