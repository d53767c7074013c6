"""Prior-or-Feedback findings on pde1d: does a config proposer use the experimental feedback
in its trial history, or only its prior? Random search (negative control), Optuna TPE
(positive control) and the [impl] rule-based "prior from the PDE descriptor + local search"
proposer, each running the same 20-trial search per (source -> target condition, seed),
paired on the same suite, data seed and proposer seed.

The searches and replays are the loop's own pure functions (tasks/loops/prior_or_feedback:
``protocol.search``, ``protocol.replay``, ``measures.evidence``), run in-process through the
suite's runner and trusted scorer (suites/pde1d/trials.py) like benchmarks/pde1d_baselines.py,
whose conditions and untuned reference this script reuses; the protocol's settings are the
loop's defaults (schemas/prior_or_feedback.py).

Paper table shape:
  1. final test nRMSE: lower than random search in N/N matched runs, than TPE in N/N
     (the paper: 36/36 and 35/36), mean paired difference with its 95% bootstrap CI;
  2. (a) the trial-1 config's rank in the matched random pool; (b) cold start: does trial
     1's lr move when only the PDE description changes;
  3. (c) - (d) feedback sensitivity = distance(permuted scores) - distance(control: same
     scores, another RNG seed), per search, CI over searches (the paper: +0.085, on a scale
     it does not give; ours: tasks/loops/prior_or_feedback/distance.py, one categorical
     change = 1/6), and paired per (condition, seed) against random search.

    .venv/bin/python benchmarks/prior_or_feedback_findings.py           # 4 conditions x 3 seeds, 20 trials
    .venv/bin/python benchmarks/prior_or_feedback_findings.py --quick   # 1 condition x 2 seeds, 8 trials
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402
from benchmarks.pde1d_baselines import CONDITIONS, _no_tuning  # noqa: E402

PROPOSERS = ("random", "tpe", "prior")


def run_searches(conditions, seeds, trials: int, sizes: dict, settings=None) -> list[dict]:
    """Every (condition, seed, proposer) search with its final test and replays, as
    ``measures.evidence`` reads them (``settings``: a PriorOrFeedbackConfig, its defaults
    when None), plus the untuned operator's test nRMSE per (condition, seed)."""
    from schemas.prior_or_feedback import PriorOrFeedbackConfig
    from suites.pde1d.suite import Pde1d
    from suites.pde1d.trials import split_nrmse
    from tasks.loops.prior_or_feedback import protocol

    s = settings or PriorOrFeedbackConfig()
    out = []
    for condition in conditions:
        source, target = (x.strip() for x in condition.split("->"))
        task, others = protocol.task_of(condition), [protocol.task_of(c) for c in s.cold_starts]
        for seed in seeds:
            suite = Pde1d(source=source, target=target, seed=seed, **sizes)
            cases = suite.cases()
            untuned = split_nrmse(suite, cases, _no_tuning(), "holdout")
            for proposer in PROPOSERS:
                found = protocol.search(proposer, task, seed, trials,
                                        lambda cfg: split_nrmse(suite, cases, cfg, "select"), s.tpe_startup)
                best = protocol.chosen(found)
                replays = protocol.replay(proposer, task, seed, found, s.decision_points, s.replays_per_point,
                                          s.tpe_startup, others)
                out.append({"condition": condition, "seed": seed, "proposer": proposer, "untuned": untuned,
                            "vals": [r["val_nrmse"] for r in found], "chosen_t": best["t"],
                            "test": split_nrmse(suite, cases, best["config"], "holdout"), "replays": replays})
    return out


def paired_rows(searches: list[dict]) -> list:
    """B vs A on the same (condition, seed): final test nRMSE and feedback sensitivity."""
    from tasks.loops.prior_or_feedback.protocol import sensitivity

    by = {(s["condition"], s["seed"], s["proposer"]): s for s in searches}
    keys = sorted({(c, seed) for c, seed, _ in by})
    rows = []
    for a, b in (("random", "prior"), ("tpe", "prior"), ("random", "tpe")):
        rows.append(paired_row(f"{b} vs {a}", "test nRMSE", a, [by[k + (a,)]["test"] for k in keys],
                               b, [by[k + (b,)]["test"] for k in keys]))
    for a, b in (("random", "tpe"), ("random", "prior")):
        rows.append(paired_row(f"{b} vs {a}", "feedback sensitivity", a,
                               [sensitivity(by[k + (a,)]["replays"]) for k in keys], b,
                               [sensitivity(by[k + (b,)]["replays"]) for k in keys]))
    return rows


def headline(searches: list[dict], resamples: int = 2000) -> str:
    """The paper's shape: one row per proposer."""
    from tasks.loops.prior_or_feedback.measures import evidence

    def num(x, fmt):
        return "n/a" if x is None else format(x, fmt)

    untuned = fmean({(s["condition"], s["seed"]): s["untuned"] for s in searches}.values())
    lines = [f"untuned operator's test nRMSE (mean over matched runs): {untuned:.4f}", "",
             "| proposer | test nRMSE | lower than random | lower than TPE | trial 1 beats (random pool) | "
             "cold start moves lr | permutation changed proposal | d(c) permuted | d(d) control | "
             "sensitivity d(c) - d(d), 95% CI | uses feedback |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for proposer in PROPOSERS:
        e = evidence(searches, proposer, resamples)
        wins = [f"{v['wins']}/{v['runs']} ({v['diff']:+.4f} [{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}])"
                if (v := e.get(f"vs_{b}")) else "—" for b in ("random", "tpe")]
        beats = None if e["first_rank_fraction"] is None else 1 - e["first_rank_fraction"]
        low, high = e["sensitivity_ci"]
        lines.append(f"| {proposer} | {e['test']:.4f} | {wins[0]} | {wins[1]} | {num(beats, '.0%')} | "
                     f"{num(e['cold_start_lr_moved'], '.0%')} | {num(e['permuted_changed'], '.0%')} | "
                     f"{num(e['d_permuted'], '.3f')} | {num(e['d_control'], '.3f')} | "
                     f"{num(e['sensitivity'], '+.3f')} [{low:+.3f}, {high:+.3f}] | "
                     f"{'yes' if e['uses_feedback'] else 'no'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)
    conditions = [f"{s}->{t}" for s, t in CONDITIONS]
    if args.quick:
        conditions, args.seeds, args.trials = conditions[:1], 2, 8
    settings = None
    if args.quick:
        from schemas.prior_or_feedback import PriorOrFeedbackConfig

        settings = PriorOrFeedbackConfig(decision_points=(5, 8), tpe_startup=4)
    start = time.time()
    searches = run_searches(conditions, range(args.seeds), args.trials, {}, settings)
    text = (f"{len(conditions)} conditions x {args.seeds} seeds = {len(conditions) * args.seeds} matched runs, "
            f"{args.trials} trials per search, {len(PROPOSERS)} proposers ({time.time() - start:.0f} s)\n\n"
            f"{headline(searches)}\n\n{table(paired_rows(searches))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
