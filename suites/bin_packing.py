"""Online bin packing with an evolved priority function (FunSearch, Romera-Paredes et
al. 2023): items arrive in order and each goes, irrevocably, into a bin chosen by the
candidate's ``priority(item, bins)``.

Protocol. ``bins`` holds the remaining capacities of the open bins that can fit the
item, in the order the bins were opened; the item goes into the one with the highest
priority (the first on ties, as ``np.argmax``). A new bin of capacity C is opened only
when no open bin fits (the any-fit rule). FunSearch's notebook preallocates one bin per
item and lets ``priority`` score the empty ones too; for first fit and best fit, and for
any priority that never prefers an empty bin to a fitting open one, the two protocols
pack identically (the tests reproduce FunSearch's published baselines). A priority that
would prefer an empty bin cannot do so here. ``item`` is a float and ``bins`` a float64
array (FunSearch passes the integers of the data).

Metrics per instance: ``bins`` used, ``l1_bound`` = ceil(sum(items) / C), ``excess_pct``
= (bins / l1_bound - 1) * 100 and the primary ``neg_excess_pct`` = -excess_pct. Under
the any-fit rule at most one bin is at most half full, so bins <= 2 * l1_bound and every
valid packing has ``neg_excess_pct >= -100``: -100 is the floor for invalid output.
FunSearch's dataset figure is (mean bins / mean l1_bound - 1) * 100 over a dataset's
instances, not a mean of per-instance percentages; see ``dataset_excess_pct``.

Data (package data ``suites/reference/bin_packing``, pinned by sha256): OR1-OR4 are the OR-Library
files binpack1-4 (u120, u250, u500, u1000; 20 instances each; the file's best-known
column is not used), Weibull 5k is FunSearch's five 5000-item test instances.
``funsearch_or3.json`` is FunSearch's copy of OR3, read only to cross-check binpack3.

Splits, deterministic by an instance's index i within its dataset: i % 4 in {0, 1} is
train, 2 is select, 3 is holdout (OR: 10/5/5 instances; Weibull 5k: 3/1/1).
"""

from __future__ import annotations

import inspect
import json
import math
import reprlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from suites.base import Case, Split, Suite, Verdict
from suites.data import REFERENCE_SHA256, ReferenceDataError, read_verified

SHA256: dict[str, str] = {
    name.removeprefix("bin_packing/"): digest
    for name, digest in REFERENCE_SHA256.items() if name.startswith("bin_packing/")
}
"""The published sha256 of every file this suite reads (pinned in ``suites.data``)."""

DATASET_FILES: dict[str, str] = {
    "or1": "binpack1.txt",
    "or2": "binpack2.txt",
    "or3": "binpack3.txt",
    "or4": "binpack4.txt",
    "weibull5k": "funsearch_weibull_5k.json",
}

FLOOR = -100.0
"""``neg_excess_pct`` of an invalid output: no valid any-fit packing scores lower."""

Priority = Callable[[float, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Instance:
    """One bin packing instance as published."""

    name: str
    capacity: float
    items: tuple[float, ...]


def _number(token: str, where: str) -> int | float:
    """A data token as an int when it is one (the published data is integral), else a
    float; anything else is a data error naming where it was found."""
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)
    except ValueError:
        raise ReferenceDataError(f"{where}: {token!r} is not a number") from None


def parse_or_library(text: str, filename: str) -> list[Instance]:
    """Instances of an OR-Library binpack file: the instance count, then per instance a
    name, ``capacity n best_known`` and n item sizes (whitespace-separated)."""
    tokens = text.split()
    count = int(_number(tokens[0], f"{filename} instance count"))
    instances, pos = [], 1
    for _ in range(count):
        if pos + 4 > len(tokens):
            raise ReferenceDataError(
                f"{filename}: ends after {len(instances)} of {count} instances"
            )
        name = tokens[pos]
        capacity = _number(tokens[pos + 1], f"{filename} {name} capacity")
        size = int(_number(tokens[pos + 2], f"{filename} {name} item count"))
        items = tokens[pos + 4 : pos + 4 + size]
        if len(items) != size:
            raise ReferenceDataError(
                f"{filename} {name}: {len(items)} item sizes, expected {size}"
            )
        instances.append(
            Instance(
                name,
                capacity,
                tuple(_number(t, f"{filename} {name} item") for t in items),
            )
        )
        pos += 4 + size
    if pos != len(tokens):
        raise ReferenceDataError(
            f"{filename}: {len(tokens) - pos} tokens after the last instance"
        )
    return instances


def parse_funsearch_json(text: str, filename: str) -> list[Instance]:
    """Instances of a FunSearch dataset: ``{name: {capacity, num_items, items}}``."""
    instances = []
    for name, record in json.loads(text).items():
        if record["num_items"] != len(record["items"]):
            raise ReferenceDataError(
                f"{filename} {name}: num_items {record['num_items']} but "
                f"{len(record['items'])} items"
            )
        instances.append(Instance(name, record["capacity"], tuple(record["items"])))
    return instances


def read_instances(filename: str) -> tuple[Instance, ...]:
    """The instances of one pinned data file, checked against its recorded sha256."""
    if filename not in SHA256:
        raise ReferenceDataError(
            f"{filename} is not a bin packing data file; known: {sorted(SHA256)}"
        )
    text = read_verified(f"bin_packing/{filename}", SHA256[filename]).decode()
    parse = parse_funsearch_json if filename.endswith(".json") else parse_or_library
    return tuple(parse(text, filename))


def first_fit_priority(item: float, bins: np.ndarray) -> np.ndarray:
    """First fit: the earliest-opened fitting bin wins, because ``bins`` lists the
    fitting bins in the order they were opened."""
    return -np.arange(len(bins), dtype=float)


def best_fit_priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Best fit: the fitting bin the item leaves with the least room wins."""
    return -(bins - item)


def pack_online(
    items: Sequence[float], capacity: float, priority: Priority
) -> list[int]:
    """Pack ``items`` in arrival order with ``priority``; the bin index of each item.

    O(items x bins) numpy work. The priority sees a copy of the fitting bins' remaining
    capacities, so it cannot change the packer's state. A priority that returns the
    wrong shape is the candidate's error and raises, naming the item."""
    remaining = np.empty(len(items), dtype=float)  # (bins,) at most one bin per item
    used = 0
    assignment = []
    for index, item in enumerate(items):
        item = float(item)
        fitting = np.nonzero(remaining[:used] - item >= 0)[0]
        if fitting.size == 0:
            chosen = used
            remaining[used] = capacity
            used += 1
        else:
            scores = np.asarray(priority(item, remaining[fitting]))
            if scores.shape != fitting.shape:
                raise ValueError(
                    f"priority returned shape {scores.shape} for {fitting.size} fitting "
                    f"bins at item {index}; expected one score per bin"
                )
            chosen = int(fitting[np.argmax(scores)])
        remaining[chosen] -= item
        assignment.append(chosen)
    return assignment


def run(fn, payload):
    """Pack the case's items with the candidate's ``priority``."""
    return {"assignment": pack_online(payload["items"], payload["capacity"], fn)}


RUNNER_SOURCE = "\n\n".join(
    [
        "from __future__ import annotations\n\nimport numpy as np",
        inspect.getsource(pack_online),
        inspect.getsource(run),
    ]
)
"""The sandbox runner: this module's own ``pack_online`` and ``run``, so the sandbox
packs exactly as the tests and the baselines do."""

SEED_PROGRAM = '''"""Seed for online bin packing: best fit, FunSearch's starting heuristic, with knobs."""

import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Prefer the fitting bin the item fills most tightly (best fit), on gaps measured in
    item sizes. The other terms start switched off (weights 0.0) for the search to turn
    on: a bonus for a bin the item almost fills, and a penalty for leaving a gap too
    small for another item of this size."""
    gap = (bins - item) / item
    score = -1.0 * gap
    score = score + 0.0 * (gap <= 0.05)
    score = score - 0.0 * np.exp(-gap / 0.5)
    return score
'''


def l1_bound(items: Sequence[float], capacity: float) -> int:
    """The L1 lower bound on the number of bins: ceil(total size / capacity)."""
    return math.ceil(math.fsum(items) / capacity)


def check_assignment(
    items: Sequence[float], capacity: float, assignment: Any
) -> int | str:
    """The number of bins of a valid online packing, or the first rule it breaks.

    Replays the packing with the packer's own arithmetic: bin ids must be 0..B-1 in
    order of first use, no bin may overflow, and a bin may be opened only when no open
    bin fits the item at that moment."""
    if not isinstance(assignment, list):
        return f"assignment is {type(assignment).__name__}, not a list"
    if len(assignment) != len(items):
        return f"assignment has {len(assignment)} entries for {len(items)} items"
    remaining = np.empty(len(items), dtype=float)  # (bins,)
    used = 0
    for index, (item, chosen) in enumerate(zip(items, assignment, strict=True)):
        if isinstance(chosen, bool) or not isinstance(chosen, Integral):
            kind = type(chosen).__name__
            return (
                f"assignment[{index}] is {kind} {reprlib.repr(chosen)}, not a bin index"
            )
        item = float(item)
        if not 0 <= chosen <= used:
            return (
                f"item {index} goes to bin {chosen}; "
                f"bins must be numbered 0..{used} in order of first use"
            )
        if chosen == used:
            fitting = np.nonzero(remaining[:used] - item >= 0)[0]
            if fitting.size:
                return (
                    f"item {index} (size {item:g}) opens bin {chosen} "
                    f"although bin {fitting[0]} fits it (any-fit rule)"
                )
            remaining[used] = capacity
            used += 1
        if remaining[chosen] - item < 0:
            return (
                f"item {index} (size {item:g}) overfills bin {chosen}, "
                f"which has {remaining[chosen]:g} left"
            )
        remaining[chosen] -= item
    return used


def dataset_excess_pct(verdicts: Mapping[str, Verdict]) -> dict[str, float]:
    """FunSearch's excess per dataset, (mean bins / mean l1_bound - 1) * 100, from
    verdicts keyed by case id ("or1/u120_00"). Over a subset of a dataset's instances
    (one split), it is that subset's figure. Defined only when every verdict is valid:
    dropping a failed instance would flatter the candidate."""
    bins, bounds = defaultdict(list), defaultdict(list)
    for case_id, verdict in verdicts.items():
        if not verdict.valid:
            raise ValueError(
                f"case {case_id} is invalid ({verdict.reason}); excess is undefined"
            )
        dataset = case_id.split("/", 1)[0]
        bins[dataset].append(verdict.metrics["bins"])
        bounds[dataset].append(verdict.metrics["l1_bound"])
    return {d: float(np.mean(bins[d]) / np.mean(bounds[d]) - 1.0) * 100.0 for d in bins}


def split_of(index: int) -> Split:
    """The split of a dataset's ``index``-th instance."""
    return ("train", "train", "select", "holdout")[index % 4]


class BinPacking(Suite):
    """Online bin packing on the OR-Library and FunSearch Weibull 5k instances."""

    name = "bin_packing"
    primary_metric = "neg_excess_pct"
    entrypoint = "priority"
    candidate = "a Python `priority(item, bins)` for online bin packing"
    reference = "the L1 bound (excess % over it; FunSearch's metric) and best fit, the seed"

    def check_data(self) -> int:
        return sum(len(read_verified(f"bin_packing/{f}", SHA256[f])) > 0 for f in
                   sorted({DATASET_FILES[d] for d in self.datasets}))

    def __init__(self, datasets: Sequence[str] | str = tuple(DATASET_FILES)):
        if isinstance(datasets, str):  # "or1,or2" from the command line
            datasets = tuple(d.strip() for d in datasets.split(",") if d.strip())
        if not datasets:
            raise ValueError(
                f"bin_packing: datasets must be a non-empty list of names, got {datasets!r}"
            )
        unknown = [d for d in datasets if d not in DATASET_FILES]
        if unknown:
            raise ValueError(
                f"bin_packing: unknown datasets {unknown}; known: {list(DATASET_FILES)}"
            )
        if len(set(datasets)) != len(datasets):
            raise ValueError(f"bin_packing: datasets has duplicates: {list(datasets)}")
        self.datasets = tuple(datasets)

    def cases(self) -> list[Case]:
        cases = []
        for dataset in self.datasets:
            for index, instance in enumerate(read_instances(DATASET_FILES[dataset])):
                payload = {
                    "dataset": dataset,
                    "capacity": instance.capacity,
                    "items": list(instance.items),
                }
                cases.append(
                    Case(f"{dataset}/{instance.name}", split_of(index), payload)
                )
        return cases

    def seed_program(self) -> str:
        return SEED_PROGRAM

    def runner_source(self) -> str:
        return RUNNER_SOURCE

    def score(self, case: Case, output: Any) -> Verdict:
        items, capacity = case.payload["items"], case.payload["capacity"]
        bound = l1_bound(items, capacity)
        if not isinstance(output, dict) or "assignment" not in output:
            reason = (
                f"output must be a dict with 'assignment', got {reprlib.repr(output)}"
            )
            return Verdict(
                False, {"l1_bound": float(bound), self.primary_metric: FLOOR}, reason
            )
        checked = check_assignment(items, capacity, output["assignment"])
        if isinstance(checked, str):
            return Verdict(
                False, {"l1_bound": float(bound), self.primary_metric: FLOOR}, checked
            )
        excess = (checked / bound - 1.0) * 100.0
        metrics = {
            "bins": checked,
            "l1_bound": bound,
            "excess_pct": excess,
            "neg_excess_pct": -excess,
        }
        return Verdict(True, {k: float(v) for k, v in metrics.items()})

    def normalize(self, value: float) -> float:
        """``1 + neg_excess_pct / 100`` = 2 - bins / l1_bound: 1.0 when a packing meets
        the L1 bound (provably optimal), 0.0 at the floor. The published best is not
        used as 1.0: no heuristic can beat the bound, while one can beat FunSearch."""
        return 1.0 + value / 100.0
