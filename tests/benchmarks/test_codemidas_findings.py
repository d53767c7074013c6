"""The CodeMidas findings' figures on hand-built construction results, and one real
construction of a tiny pool (slow)."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "codemidas_findings.py"


def found(cid, stage, holds, holdout_ms, verdicts, rewards):
    attempts = [{"solver": f"m{i}", "reviewer_verdict": v, "select_pass": r, "leak_found": False}
                for i, (v, r) in enumerate(zip(verdicts, rewards))]
    attempts.append({"solver": "retrieval", "reviewer_verdict": "pass_confirmed", "select_pass": 1.0, "leak_found": True})
    return {"candidate": {"cand_id": cid, "stage_reached": stage}, "evidence": {"holdout_holds": holds},
            "checks": [{"split": "select", "mutation_score": 1.0}, {"split": "holdout", "mutation_score": holdout_ms}],
            "attempts": attempts}


def test_env_metrics_read_the_held_out_side_and_leave_the_leak_probe_out(bench):
    m = bench.env_metrics(found("a::f", "kept", True, 0.5, ["fail_confirmed", "false_positive"], [0.0, 1.0]))
    assert m == {"cand_id": "a::f", "kept": True, "reliable": 1.0, "mutation_score": 0.5, "false_positives": 0.5,
                 "reward_spread": 0.5}
    assert bench.env_metrics({"candidate": {"cand_id": "a::g", "stage_reached": "probe"}, "checks": [],
                              "attempts": [], "evidence": {}}) is None


def test_comparisons_pair_filtered_and_unfiltered_within_each_seed(bench):
    def env(kept, ms):
        return {"kept": kept, "reliable": 1.0, "mutation_score": ms, "false_positives": 0.0, "reward_spread": 0.0}
    per_seed = {0: [env(True, 1.0), env(False, 0.5)], 1: [env(True, 0.8), env(True, 0.6), env(False, 0.4)]}
    row = next(r for r in bench.comparisons(per_seed) if r["metric"] == "mutation_score")
    # seed 0: 1.0 − 0.75 = 0.25; seed 1: 0.7 − 0.6 = 0.1
    assert row["delta"] == pytest.approx(0.175) and row["seeds"] == 2
    assert row["ci"][0] == pytest.approx(0.1) and row["ci"][1] == pytest.approx(0.25)
    assert row["kept_minus_dropped"] == pytest.approx(0.8 - 0.45)
    assert row["filtered"] == pytest.approx(0.8) and row["unfiltered"] == pytest.approx(3.3 / 5)


@pytest.mark.slow
def test_a_real_tiny_pool(bench, capsys):
    rows = bench.main(["--modules", "colorsys", "dataclasses", "--seeds", "2", "--n-tests", "12", "--site-mutants", "4"])
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert head.startswith("candidates 12 (2 seeds)") and head.endswith("leaks caught (retrieval passes) 12")
    counts = dict(part.rsplit(" ", 1) for part in head.split(": ")[1].split(";")[0].split(", "))
    assert sum(map(int, counts.values())) == 12 and int(counts["kept"]) >= 1
    assert int(counts["gate2"]) >= 2  # _tuple_str has no mutable site: every attempt fails it on both seeds
    assert {r["metric"] for r in rows} == set(bench.METRICS)
    assert all(r["ci"][0] <= r["delta"] <= r["ci"][1] for r in rows)
