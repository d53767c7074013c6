"""One run of the protocol as pure functions over a trial history: the 20-trial search,
the replays of interventions (b), (c), (d) and the per-run measures.

- (b) cold start: trial 1 proposed again with only the PDE description (the task's
  source -> target) changed, for each alternative description.
- (c) at each decision point t (history of trials 1 .. t-1), the validation scores
  permuted among the evaluated configs, same seed: the proposal's distance from trial t's.
- (d) control: the same scores, another RNG seed (for non-LLM proposers the notation
  control becomes resampling noise).
Feedback sensitivity of a run = mean distance(c) - mean distance(d)."""

from __future__ import annotations

import time
from statistics import fmean
from typing import Callable, Sequence

from suites.pde1d.space import CONFIG_SPACE
from suites.pde1d.suite import parse_condition
from tasks.loops.prior_or_feedback.distance import config_distance, permuted
from tasks.loops.prior_or_feedback.proposers import History, propose

INTERVENTIONS = ("cold_start", "permuted", "control")


def task_of(condition: str) -> dict:
    """``"burgers:0.1->burgers:0.02"`` -> the task the proposers read: source and target."""
    source, target = condition.split("->")
    return {"source": parse_condition(source.strip()), "target": parse_condition(target.strip())}


def search(proposer: str, task: dict, seed: object, trials: int, evaluate: Callable[[dict], float],
           startup: int) -> list[dict]:
    """``trials`` proposals in turn, each evaluated (validation nRMSE) before the next."""
    history: list[tuple[dict, float]] = []
    out = []
    for t in range(1, trials + 1):
        start = time.perf_counter()
        config = propose(proposer, task, history, seed, t, startup)
        value = evaluate(config)
        history.append((config, value))
        out.append({"t": t, "config": config, "val_nrmse": value, "wall_s": time.perf_counter() - start})
    return out


def chosen(trials: Sequence[dict]) -> dict:
    """The best-validation trial (the earliest of ties): the run's output."""
    return min(trials, key=lambda r: (r["val_nrmse"], r["t"]))


def replay(proposer: str, task: dict, seed: object, trials: Sequence[dict], points: Sequence[int],
           per_point: int, startup: int, descriptions: Sequence[dict] = ()) -> list[dict]:
    """Replays of (b) at t = 1 and (c), (d) at each decision point ``t <= len(trials)``
    (``t >= 3``: two scores to permute); each row has the proposal and its distance from
    the recorded trial-t config."""
    rows = []
    first = trials[0]["config"]
    for k, other in enumerate(descriptions):
        config = propose(proposer, other, [], seed, 1, startup)
        rows.append({**_row(1, "cold_start", k, config, first), "lr_moved": config["lr"] != first["lr"]})
    for t in (p for p in points if 3 <= p <= len(trials)):
        history: History = [(r["config"], r["val_nrmse"]) for r in trials[:t - 1]]
        original = trials[t - 1]["config"]
        for k in range(per_point):
            values = permuted([v for _, v in history], (seed, t, k))
            config = propose(proposer, task, [(c, v) for (c, _), v in zip(history, values)], seed, t, startup)
            rows.append(_row(t, "permuted", k, config, original))
            config = propose(proposer, task, history, (seed, "control", k), t, startup)
            rows.append(_row(t, "control", k, config, original))
    return rows


def _row(t: int, intervention: str, k: int, config: dict, original: dict) -> dict:
    return {"t": t, "intervention": intervention, "replay_no": k, "config": config,
            "norm_distance": config_distance(CONFIG_SPACE, config, original)}


def sensitivity(replays: Sequence[dict]) -> float | None:
    """mean distance(c) - mean distance(d) over a run's replays (None without both)."""
    c = [r["norm_distance"] for r in replays if r["intervention"] == "permuted"]
    d = [r["norm_distance"] for r in replays if r["intervention"] == "control"]
    return fmean(c) - fmean(d) if c and d else None
