"""Every layer reported apart, and where per-turn and workflow scores disagree. Pure:
reads ``decisions`` and ``closed_loop`` rows.

A *layer* is one score per conversation and checkpoint: L1–L3 the mean over the
conversation's text (or tool) turns, L4 ``completed`` and L5 holistic success as 0/1.
Comparisons are paired over conversations: a conversation's value is its mean over the
run's models (seeds), and SFT − base is bootstrapped over conversations
(``tasks.gate.stats``). The noise floor of a layer is the largest gap between two
models' means of the same checkpoint (seeds of one recipe on the same conversations);
an SFT − base effect no larger is inside it. One model: no floor measured (nan).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import mean
from typing import Sequence

from schemas.rows import ClosedLoopRow, DecisionRow
from tasks.gate.stats import paired_bootstrap_ci, paired_differences, spearman

TURN_LAYERS = {"L1_sim": "sim", "L2_judge": "judge_ok", "L3_exact": "tool_exact"}
LOOP_LAYERS = {"L4_completed": lambda r: r.completed,
               "L5_holistic": lambda r: r.goal_ok and r.policy_ok and r.tool_use_ok}
LAYERS = tuple(f"{layer}:{kind}" for layer in TURN_LAYERS for kind in ("text", "tool")) + tuple(LOOP_LAYERS)
"""Every reported layer; turn layers apart for text and tool turns."""


@dataclass(frozen=True)
class Comparison:
    layer: str
    base: float
    sft: float
    delta: float
    ci: tuple[float, float]
    n_cases: int
    per_model: dict[str, dict[str, float]]
    """ckpt -> model -> the layer's mean."""
    noise_floor: float
    inside_floor: bool


Values = dict[tuple[str, str], dict[str, float]]
"""(ckpt, model) -> conv_id -> the layer's value."""


def layer_values(layer: str, decisions: Sequence[DecisionRow], closed: Sequence[ClosedLoopRow]) -> Values:
    """Per (ckpt, model), every conversation's value of one layer (a conversation with
    no turn of the layer's kind has none)."""
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    if layer in LOOP_LAYERS:
        for row in closed:
            out.setdefault((row.ckpt, row.model), {}).setdefault(row.conv_id, []).append(float(LOOP_LAYERS[layer](row)))
    else:
        name, kind = layer.split(":")
        for row in decisions:
            if row.kind == kind:
                value = float(getattr(row, TURN_LAYERS[name]))
                out.setdefault((row.ckpt, row.model), {}).setdefault(row.conv_id, []).append(value)
    return {key: {conv: mean(v) for conv, v in convs.items()} for key, convs in out.items()}


def case_means(values: Values, ckpt: str) -> dict[str, float]:
    """conv_id -> the layer's mean over the checkpoint's models (conversations every model has)."""
    per_model = [v for (c, _), v in sorted(values.items()) if c == ckpt]
    if not per_model:
        return {}
    shared = set.intersection(*(set(v) for v in per_model))
    return {conv: mean(v[conv] for v in per_model) for conv in sorted(shared)}


def noise_floor(values: Values, ckpt: str) -> float:
    """The largest |mean(model i) − mean(model j)| of one checkpoint; nan with one model."""
    means = [mean(v.values()) for (c, _), v in sorted(values.items()) if c == ckpt and v]
    if len(means) < 2:
        return math.nan
    return max(abs(a - b) for a, b in itertools.combinations(means, 2))


def compare_layer(layer: str, decisions: Sequence[DecisionRow], closed: Sequence[ClosedLoopRow],
                  resamples: int, seed: int) -> Comparison:
    """SFT − base on one layer, paired over conversations, with the noise floor (the
    larger of the two checkpoints' floors)."""
    values = layer_values(layer, decisions, closed)
    base, sft = case_means(values, "base"), case_means(values, "sft")
    shared = sorted(set(base) & set(sft))
    cases, diffs = paired_differences({c: sft[c] for c in shared}, {c: base[c] for c in shared})
    ci = paired_bootstrap_ci(diffs, resamples=resamples, seed=seed)
    floors = [f for f in (noise_floor(values, "base"), noise_floor(values, "sft")) if not math.isnan(f)]
    floor = max(floors) if floors else math.nan
    delta = mean(diffs) if diffs else math.nan
    per_model = {ckpt: {model: mean(v.values()) for (c, model), v in sorted(values.items()) if c == ckpt and v}
                 for ckpt in ("base", "sft")}
    return Comparison(layer, mean(base[c] for c in shared) if shared else math.nan,
                      mean(sft[c] for c in shared) if shared else math.nan, delta, ci, len(cases), per_model,
                      floor, not math.isnan(floor) and abs(delta) <= floor)


@dataclass(frozen=True)
class Disagreement:
    ckpt: str
    turn_success: float
    """Mean over conversations of the share of exact turns (L3, text and tool turns)."""
    completion: float
    gap: float
    """turn_success − completion, paired over conversations."""
    gap_ci: tuple[float, float]
    rank_agreement: float
    """Spearman between a (model, conversation)'s mean L1 similarity and its completion."""
    high_sim_incomplete: list[str]
    """``model/conv_id`` whose mean L1 similarity is at least ``high_sim`` yet did not complete."""
    high_sim_runs: int
    other_paths: list[str]
    """``model/conv_id`` that succeeded holistically (L5) without the reference's calls:
    the valid alternative paths exact-match completion undercounts (the paper's caveat)."""
    n_cases: int


def disagreement(ckpt: str, decisions: Sequence[DecisionRow], closed: Sequence[ClosedLoopRow], high_sim: float,
                 resamples: int, seed: int) -> Disagreement:
    """Where per-turn scores and workflow completion part, for one checkpoint."""
    turns: dict[tuple[str, str], list[DecisionRow]] = {}
    for row in decisions:
        if row.ckpt == ckpt:
            turns.setdefault((row.model, row.conv_id), []).append(row)
    runs = {(r.model, r.conv_id): r for r in closed if r.ckpt == ckpt and (r.model, r.conv_id) in turns}
    keys = sorted(runs)
    sim = [mean(t.sim for t in turns[k]) for k in keys]
    done = [float(runs[k].completed) for k in keys]
    exact = _by_case(keys, [mean(float(t.tool_exact) for t in turns[k]) for k in keys])
    completed = _by_case(keys, done)
    cases, diffs = paired_differences(exact, completed)
    high = [(f"{m}/{c}", d) for (m, c), s, d in zip(keys, sim, done) if s >= high_sim]
    holistic = LOOP_LAYERS["L5_holistic"]
    other = [f"{m}/{c}" for m, c in keys if holistic(runs[(m, c)]) and not runs[(m, c)].completed]
    return Disagreement(ckpt, _mean(exact.values()), _mean(completed.values()), _mean(diffs),
                        paired_bootstrap_ci(diffs, resamples=resamples, seed=seed),
                        spearman(sim, done) if len(keys) > 1 else math.nan,
                        [name for name, d in high if not d], len(high),
                        other, len(cases))


def _by_case(keys: Sequence[tuple[str, str]], values: Sequence[float]) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for (_, conv), value in zip(keys, values):
        out.setdefault(conv, []).append(value)
    return {conv: mean(v) for conv, v in out.items()}


def _mean(values) -> float:
    values = list(values)
    return mean(values) if values else math.nan

