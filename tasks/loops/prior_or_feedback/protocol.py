"""One run of the protocol as pure functions over a trial history: the 20-trial search,
the replays of interventions (b), (c), (d) and the per-run measures.

- (b) cold start: trial 1 proposed again with only the PDE description (the task's
  source -> target) changed, for each alternative description.
- (c) at each decision point t (history of trials 1 .. t-1), the validation scores
  permuted among the evaluated configs, same seed: the proposal's distance from trial t's.
- (d) control: the same scores, another RNG seed (for non-LLM proposers the notation
  control becomes resampling noise); a proposer with a ``control`` method (the LLM's:
  the scores in scientific notation) runs that instead.
Feedback sensitivity of a run = mean distance(c) - mean distance(d).

A proposer is a name of ``proposers.PROPOSERS`` or a callable (task, history, seed, t,
startup) -> (config, error): ``error`` is "" or why its own answer was not used (the
LLM's; a row records it as ``error``)."""

from __future__ import annotations

import time
from statistics import fmean
from typing import Callable, Sequence, Union

from suites.pde1d.space import CONFIG_SPACE
from suites.pde1d.suite import parse_condition
from tasks.loops.prior_or_feedback.distance import config_distance, permuted
from tasks.loops.prior_or_feedback.proposers import History, propose

INTERVENTIONS = ("cold_start", "permuted", "control")
Proposer = Union[str, Callable[..., tuple[dict, str]]]


def proposers_of(names: Sequence[str], proposer_kind: str) -> tuple[str, ...]:
    """The run's proposers: under `proposer: llm` the LLM takes the rule-based prior's place."""
    return tuple("llm" if p == "prior" and proposer_kind == "llm" else p for p in names)


def _ask(proposer: Proposer, task: dict, history: History, seed: object, t: int, startup: int) -> tuple[dict, str]:
    if callable(proposer):
        return proposer(task, history, seed, t, startup)
    return propose(proposer, task, history, seed, t, startup), ""


def _control(proposer: Proposer, task: dict, history: History, seed: object, t: int, startup: int,
             k: int) -> tuple[dict, str]:
    if callable(getattr(proposer, "control", None)):
        return proposer.control(task, history, seed, t, startup, k)
    return _ask(proposer, task, history, (seed, "control", k), t, startup)


def task_of(condition: str) -> dict:
    """``"burgers:0.1->burgers:0.02"`` -> the task the proposers read: source and target."""
    source, target = condition.split("->")
    return {"source": parse_condition(source.strip()), "target": parse_condition(target.strip())}


def search(proposer: Proposer, task: dict, seed: object, trials: int, evaluate: Callable[[dict], float],
           startup: int) -> list[dict]:
    """``trials`` proposals in turn, each evaluated (validation nRMSE) before the next."""
    history: list[tuple[dict, float]] = []
    out = []
    for t in range(1, trials + 1):
        start = time.perf_counter()
        config, error = _ask(proposer, task, history, seed, t, startup)
        value = evaluate(config)
        history.append((config, value))
        out.append({"t": t, "config": config, "val_nrmse": value, "wall_s": time.perf_counter() - start,
                    "error": error})
    return out


def chosen(trials: Sequence[dict]) -> dict:
    """The best-validation trial (the earliest of ties): the run's output."""
    return min(trials, key=lambda r: (r["val_nrmse"], r["t"]))


def replay(proposer: Proposer, task: dict, seed: object, trials: Sequence[dict], points: Sequence[int],
           per_point: int, startup: int, descriptions: Sequence[dict] = ()) -> list[dict]:
    """Replays of (b) at t = 1 and (c), (d) at each decision point ``t <= len(trials)``
    (``t >= 3``: two scores to permute); each row has the proposal and its distance from
    the recorded trial-t config."""
    rows = []
    first = trials[0]["config"]
    for k, other in enumerate(descriptions):
        config, error = _ask(proposer, other, [], seed, 1, startup)
        rows.append({**_row(1, "cold_start", k, config, first, error), "lr_moved": config["lr"] != first["lr"]})
    for t in (p for p in points if 3 <= p <= len(trials)):
        history: History = [(r["config"], r["val_nrmse"]) for r in trials[:t - 1]]
        original = trials[t - 1]["config"]
        for k in range(per_point):
            values = permuted([v for _, v in history], (seed, t, k))
            config, error = _ask(proposer, task, [(c, v) for (c, _), v in zip(history, values)], seed, t, startup)
            rows.append(_row(t, "permuted", k, config, original, error))
            config, error = _control(proposer, task, history, seed, t, startup, k)
            rows.append(_row(t, "control", k, config, original, error))
    return rows


def _row(t: int, intervention: str, k: int, config: dict, original: dict, error: str = "") -> dict:
    return {"t": t, "intervention": intervention, "replay_no": k, "config": config,
            "norm_distance": config_distance(CONFIG_SPACE, config, original), "error": error}


def sensitivity(replays: Sequence[dict]) -> float | None:
    """mean distance(c) - mean distance(d) over a run's replays (None without both); a
    replay whose proposer's own answer was not used (``error``) is left out."""
    used = [r for r in replays if not r.get("error")]
    c = [r["norm_distance"] for r in used if r["intervention"] == "permuted"]
    d = [r["norm_distance"] for r in used if r["intervention"] == "control"]
    return fmean(c) - fmean(d) if c and d else None
