"""The curriculum agent (pure): cells of template x parameter x failure event, the
breadth phase's stratified plan and the depth phase's bandit.

A cell's parameter is one of the template's train instances (its world and request);
its failure event is a fault rate (``schemas.rsiagent.EVENTS``). The target split is not
an input: the curriculum knows the environment's templates (the "target direction" the
paper's caveat names), never a target task.

Breadth: strata are templates; each slot takes the template least visited so far
(ties in template order), then its least visited cell (ties broken by the round's rng),
and slots go to workers round robin (the paper's parallel exploration on 2 workers).

Depth: every cell scores ``1 - (s + 1) / (n + 2)`` (its verified failure rate with a
uniform prior) ``+ novelty`` when its last run showed a failure signature never seen
before ``+ explore * sqrt(ln(N + 1) / (n + 1))``; the top ``tasks`` cells run, ties in
cell order. Deviation: the paper's depth phase is goal- and feedback-driven by an LLM;
here it is this fixed bandit (the ``llm`` path writes memory, not the plan).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Mapping, Sequence

Cell = tuple[str, str, str]
"""(template, parameter: the source train case id, event)."""


def cell_key(cell: Cell) -> str:
    return "|".join(cell)


def cells(train_cases: Mapping[str, Sequence[str]], params_per_template: int, events: Sequence[str]) -> list[Cell]:
    """Every cell: template -> its first ``params_per_template`` train case ids, x events."""
    return [(template, case_id, event) for template in sorted(train_cases)
            for case_id in sorted(train_cases[template])[:params_per_template] for event in events]


def breadth_plan(all_cells: Sequence[Cell], visits: Mapping[Cell, int], tasks: int, workers: int,
                 rng: random.Random) -> list[tuple[Cell, int]]:
    """(cell, worker) of ``tasks`` slots, stratified over templates (module docstring)."""
    counts = {c: visits.get(c, 0) for c in all_cells}
    by_template: dict[str, list[Cell]] = {}
    for c in all_cells:
        by_template.setdefault(c[0], []).append(c)
    plan = []
    for slot in range(tasks):
        template = min(by_template, key=lambda t: (sum(counts[c] for c in by_template[t]), t))
        least = min(counts[c] for c in by_template[template])
        choice = rng.choice([c for c in by_template[template] if counts[c] == least])
        counts[choice] += 1
        plan.append((choice, slot % workers))
    return plan


@dataclass
class CellStats:
    """What the bandit knows of one cell: verified runs, successes, whether its last run
    showed a new failure signature."""

    runs: int = 0
    successes: int = 0
    novel: bool = False
    signatures: set[str] = field(default_factory=set)


def cell_stats(history: Sequence[tuple[Cell, bool, str | None]]) -> dict[Cell, CellStats]:
    """Per cell, from attempts in order: (cell, verdict, failure signature or None)."""
    seen: set[str] = set()
    out: dict[Cell, CellStats] = {}
    for cell, verdict, signature in history:
        stats = out.setdefault(cell, CellStats())
        stats.runs += 1
        stats.successes += int(verdict)
        stats.novel = signature is not None and signature not in seen
        if signature is not None:
            seen.add(signature)
            stats.signatures.add(signature)
    return out


def depth_score(stats: CellStats | None, total_runs: int, novelty: float, explore: float) -> float:
    s = stats or CellStats()
    failure = 1.0 - (s.successes + 1) / (s.runs + 2)
    return failure + (novelty if s.novel else 0.0) + explore * math.sqrt(math.log(total_runs + 1) / (s.runs + 1))


def depth_plan(all_cells: Sequence[Cell], stats: Mapping[Cell, CellStats], tasks: int, workers: int,
               novelty: float, explore: float) -> list[tuple[Cell, int]]:
    """(cell, worker) of the ``tasks`` top-scoring cells (module docstring)."""
    total = sum(s.runs for s in stats.values())
    order = sorted(range(len(all_cells)),
                   key=lambda i: (-depth_score(stats.get(all_cells[i]), total, novelty, explore), i))
    return [(all_cells[i], slot % workers) for slot, i in enumerate(order[:tasks])]
