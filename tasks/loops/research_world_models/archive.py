"""The experiment archive on the lasso suite: an intervention is a setting of the seed
solver's knobs, an environment is one dataset, and the gain is the mean over the
dataset's cases of the intervention's ``neg_log10_cpu_ms`` minus the seed's (0.1 = a
1.26x speed-up). Near-duplicate group: the interventions that switch on the same
structural changes (Gram, screening, active sweeps, alpha path); they differ only in
constants (gap-check interval, shuffling, tolerance scale)."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import defaultdict
from statistics import fmean
from typing import Mapping, Sequence

from tasks.loops.research_world_models.selection import Record

KNOBS: dict[str, tuple[float, ...]] = {
    "GAP_EVERY": (1, 5, 20),
    "SHUFFLE": (0, 1),
    "USE_GRAM": (0, 1),
    "SCREEN": (0, 1),
    "ACTIVE_SWEEPS": (0, 2, 8),
    "PATH_STEPS": (1, 4),
    "TOL_SCALE": (1.0, 0.5),
}
"""Each knob of ``suites/lasso_seed.py`` an intervention sets, and its values."""
STRUCTURAL = ("USE_GRAM", "SCREEN", "ACTIVE_SWEEPS", "PATH_STEPS")


def interventions(count: int, seed: int) -> list[dict[str, float]]:
    """``count`` distinct knob settings drawn without replacement (seeded), none the seed's."""
    grid = [dict(zip(KNOBS, values)) for values in itertools.product(*KNOBS.values())]
    grid = [g for g in grid if g != {k: v[0] for k, v in KNOBS.items()}]
    return random.Random(seed).sample(grid, count)


def apply_knobs(source: str, knobs: Mapping[str, float]) -> str:
    """The seed source with each ``NAME = value`` line's value replaced."""
    for name, value in knobs.items():
        source, hits = re.subn(rf"^{name} = [^\s#]+", f"{name} = {value!r}", source, count=1, flags=re.M)
        if hits != 1:
            raise ValueError(f"the seed program has no knob {name}")
    return source


def features(knobs: Mapping[str, float]) -> tuple[float, ...]:
    """Knobs on comparable scales: logs of the counts, the switches as 0/1."""
    return (math.log(knobs["GAP_EVERY"]), float(knobs["SHUFFLE"]), float(knobs["USE_GRAM"]),
            float(knobs["SCREEN"]), math.log1p(knobs["ACTIVE_SWEEPS"]), math.log(knobs["PATH_STEPS"]),
            float(knobs["TOL_SCALE"]))


def group_of(knobs: Mapping[str, float]) -> str:
    """The near-duplicate group: which structural changes are switched on."""
    on = [name for name in STRUCTURAL if knobs[name] > (1 if name == "PATH_STEPS" else 0)]
    return "+".join(on) or "constants-only"


def records(knob_sets: Sequence[Mapping[str, float]], scores: Sequence[Mapping[str, float]],
            seed_scores: Mapping[str, float]) -> list[Record]:
    """One record per (intervention, dataset): ``scores[i]`` maps case ids
    (``dataset/alpha``) to intervention i's primary metric, ``seed_scores`` the seed's."""
    out = []
    for index, (knobs, case_scores) in enumerate(zip(knob_sets, scores, strict=True)):
        by_env = defaultdict(list)
        for case_id, value in case_scores.items():
            by_env[case_id.split("/", 1)[0]].append(value - seed_scores[case_id])
        for env, gains in sorted(by_env.items()):
            out.append(Record(f"i{index:03d}/{env}", env, group_of(knobs), features(knobs), fmean(gains)))
    return out
