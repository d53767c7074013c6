"""The protocol's verdict per proposer, from its searches matched on (condition, seed):

- final test nRMSE against the matched random search (and TPE): wins, mean paired
  difference with a bootstrap CI and a sign test;
- (a) the trial-1 config's rank within the matched random search's 20 validation scores;
- (b) cold start: share of alternative descriptions that moved trial 1's lr;
- feedback sensitivity = distance(c) - distance(d), per search, mean with a bootstrap CI;
  the proposer "uses feedback" when that CI lies above 0.

A search is a dict: condition, seed, proposer, vals (validation nRMSE per trial), test,
replays (rows of ``protocol.replay``; one with an ``error`` is left out of every measure)."""

from __future__ import annotations

from statistics import fmean
from typing import Sequence

from tasks.gate.stats import paired_bootstrap_ci, sign_test_p
from tasks.loops.prior_or_feedback.distance import rank_in_pool
from tasks.loops.prior_or_feedback.protocol import sensitivity


def matched(searches: Sequence[dict], proposer: str, baseline: str) -> list[tuple[dict, dict]]:
    """(proposer's search, baseline's search) pairs of the same condition and seed."""
    base = {(s["condition"], s["seed"]): s for s in searches if s["proposer"] == baseline}
    return [(s, base[(s["condition"], s["seed"])]) for s in searches
            if s["proposer"] == proposer and (s["condition"], s["seed"]) in base]


def versus(pairs: Sequence[tuple[dict, dict]], resamples: int = 2000) -> dict:
    d = [a["test"] - b["test"] for a, b in pairs]
    low, high = paired_bootstrap_ci(d, resamples=resamples)
    return {"runs": len(d), "wins": sum(x < 0 for x in d), "losses": sum(x > 0 for x in d),
            "diff": fmean(d) if d else None, "ci": [low, high], "sign_p": sign_test_p(d)}


def evidence(searches: Sequence[dict], proposer: str, resamples: int = 2000) -> dict:
    """Every measure of one proposer (see the module docstring)."""
    own = [s for s in searches if s["proposer"] == proposer]
    used = [r for s in own for r in s["replays"] if not r.get("error")]
    ranks = [rank_in_pool(a["vals"][0], b["vals"])[1] for a, b in matched(searches, proposer, "random")]
    sens = [x for x in (sensitivity(s["replays"]) for s in own) if x is not None]
    low, high = paired_bootstrap_ci(sens, resamples=resamples)
    permuted = [r for r in used if r["intervention"] == "permuted"]
    control = [r for r in used if r["intervention"] == "control"]
    cold = [r for r in used if r["intervention"] == "cold_start"]
    out = {"proposer": proposer, "searches": len(own), "test": fmean(s["test"] for s in own) if own else None,
           "first_rank_fraction": fmean(ranks) if ranks else None,
           "cold_start_lr_moved": fmean(r["lr_moved"] for r in cold) if cold else None,
           "d_permuted": fmean(r["norm_distance"] for r in permuted) if permuted else None,
           "d_control": fmean(r["norm_distance"] for r in control) if control else None,
           "permuted_changed": fmean(r["norm_distance"] > 0 for r in permuted) if permuted else None,
           "sensitivity": fmean(sens) if sens else None, "sensitivity_ci": [low, high]}
    for baseline in ("random", "tpe"):
        if baseline != proposer:
            out[f"vs_{baseline}"] = versus(matched(searches, proposer, baseline), resamples)
    out["uses_feedback"] = bool(sens) and low > 0
    return out


def reason(e: dict) -> str:
    def num(x, fmt="+.3f"):
        return "n/a" if x is None else format(x, fmt)

    parts = [f"{e['proposer']}: feedback sensitivity {num(e['sensitivity'])} "
             f"[{num(e['sensitivity_ci'][0])}, {num(e['sensitivity_ci'][1])}] over {e['searches']} searches "
             f"(permuted {num(e['d_permuted'], '.3f')} vs control {num(e['d_control'], '.3f')}; "
             f"permutation changed the proposal in {num(e['permuted_changed'], '.0%')})",
             f"trial 1 beats {num(None if e['first_rank_fraction'] is None else 1 - e['first_rank_fraction'], '.0%')} "
             f"of the matched random pool",
             f"cold start moved lr in {num(e['cold_start_lr_moved'], '.0%')}"]
    for baseline in ("random", "tpe"):
        v = e.get(f"vs_{baseline}")
        if v and v["runs"]:
            parts.append(f"test vs {baseline}: lower in {v['wins']}/{v['runs']}, Δ {num(v['diff'], '+.4f')} "
                         f"[{num(v['ci'][0], '+.4f')}, {num(v['ci'][1], '+.4f')}]")
    verdict = "uses feedback" if e["uses_feedback"] else "no evidence it uses feedback"
    return "; ".join(parts) + f": {verdict}"
