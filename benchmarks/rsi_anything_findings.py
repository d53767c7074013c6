"""RSI-Anything findings: the compatibility gate (accept the assembled pair only when it
beats the old pair) against accepting the parts separately, and the spec's WM arms (no
predictor, fixed WM, adaptive WM), paired by seed on bin_packing.

Every run is the real `rsi_anything` flow on one store; the arms of a seed share the seed,
so their warm-up draws (and, until the arms' pairs diverge, their proposals) are the
same. Every figure is read back from the run's tables:
    hidden score: the registered best program's holdout `neg_excess_pct` (the paper's
        "hidden all-pass"; higher is better);
    online pick gain: the mean public gain of the executed top picks over their parents;
    bad accepts: gate checks accepted although the assembled pair's picks did not beat the
        old pair's on the validation draws (delta <= 0): what the pair gate refuses;
    online calls: public cases executed for the top picks (validation is counted apart).

    .venv/bin/python benchmarks/rsi_anything_findings.py             # 3 seeds, 6 rounds
    .venv/bin/python benchmarks/rsi_anything_findings.py --quick     # 2 seeds, 2 rounds, or1 only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = {"parts": {"gate": "parts"}, "pair": {"gate": "pair"}, "fixed_wm": {"wm": "fixed"}, "no_wm": {"wm": "none"}}
"""Arm -> its `rsi_anything` section; the rest is the default (pair gate, adaptive WM)."""


def run_arm(store_uri: str, arm: str, seed: int, rounds: int, datasets: str | None) -> str:
    from flows.rsi_anything import rsi_anything
    from schemas.configs import RunConfig

    params = {"datasets": datasets} if datasets else {}
    config = RunConfig(loop="rsi_anything", suite="bin_packing", budget=rounds, seed=seed, tracking=False, workers=2,
                       suite_params=params, rsi_anything=ARMS[arm])
    run_id = f"rsi-{arm}-s{seed}"
    rsi_anything(config=config, store_uri=store_uri, run_id=run_id)
    return run_id


def run_metrics(executions: list, decisions: list) -> dict[str, float]:
    """One run's figures from its `rsi_executions` and `gate_decisions` rows."""
    (final,) = [e for e in executions if e.phase == "final"]
    online = [e for e in executions if e.phase == "online"]
    return {"hidden": final.hidden_score, "pick_gain": fmean(e.gain for e in online) if online else 0.0,
            "bad_accepts": float(sum(d.decision == "accept" and d.delta <= 0 for d in decisions)),
            "accepts": float(sum(d.decision == "accept" for d in decisions)), "checks": float(len(decisions)),
            "online_calls": float(sum(e.test_calls for e in online)),
            "validation_calls": float(sum(e.test_calls for e in executions if e.phase == "validate"))}


def rows(metrics: dict[int, dict[str, dict[str, float]]]) -> list:
    seeds, out = sorted(metrics), []
    comparisons = (("pair gate vs accept the parts", "parts", "pair"),
                   ("fixed WM vs no predictor", "no_wm", "fixed_wm"), ("adaptive WM vs fixed WM", "fixed_wm", "pair"))
    for finding, a, b in comparisons:
        for key, label in (("hidden", "hidden neg_excess_pct of the best"), ("pick_gain", "online pick gain"),
                           ("bad_accepts", "accepts without a pair gain")):
            out.append(paired_row(finding, label, a, [metrics[s][a][key] for s in seeds], b,
                                  [metrics[s][b][key] for s in seeds]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 rounds, the or1 file only (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--datasets", default=None, help="bin_packing datasets (default: all five files)")
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    args = parser.parse_args(argv)
    seeds, rounds, datasets = ([0, 1], 2, "or1") if args.quick else (list(range(args.seeds)), args.rounds,
                                                                     args.datasets)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-rsi-anything-findings-")
    from cli.env import prepare_environment
    from storage.store import open_store

    prepare_environment(store_uri)
    store, metrics = open_store(store_uri), {}
    for s in seeds:
        metrics[s] = {}
        for arm in ARMS:
            run_id = run_arm(store_uri, arm, s, rounds, datasets)
            metrics[s][arm] = run_metrics(store.read_rows("rsi_executions", run_id),
                                          store.read_rows("gate_decisions", run_id))
    per_seed = "\n".join(f"seed {s}: " + "; ".join(
        f"{arm} hidden {m['hidden']:.4f}, checks {m['checks']:.0f}, accepts {m['accepts']:.0f} "
        f"({m['bad_accepts']:.0f} without a pair gain), calls {m['online_calls']:.0f} online + "
        f"{m['validation_calls']:.0f} validation" for arm, m in ms.items()) for s, ms in metrics.items())
    head = f"bin_packing ({datasets or 'all datasets'}), seeds {seeds}; {rounds} rounds; store {store_uri}"
    print("\n\n".join([head, per_seed, "Paired by seed:", table(rows(metrics)),
                       json.dumps({s: {a: m["hidden"] for a, m in ms.items()} for s, ms in metrics.items()})]))


if __name__ == "__main__":
    main()
