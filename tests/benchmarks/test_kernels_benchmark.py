"""Smoke test of benchmarks/kernels.py at its --quick sizes: every loss gets a row, every
figure is a finite positive number, and the CLI prints the table and the summary."""

import math
from pathlib import Path

from kernels.build import LOSSES

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels.py"


def finite_positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


def test_every_loss_the_kernels_expose_has_a_case(bench):
    _, _, batch = bench.make_batch(bench.QUICK)
    assert set(LOSSES) <= {type(case.cfg) for case in bench.loss_cases(batch)}


def test_one_row_per_loss_with_finite_positive_ratios(bench):
    table = bench.loss_table(bench.QUICK)
    assert [row.name for row in table.losses] == [case.name for case in bench.loss_cases(table.batch)]
    assert [row.ratio for row in table.references] == [1.0, 1.0]
    for row in table.references + table.losses + [table.check]:
        assert finite_positive(row.ms) and finite_positive(row.ratio), row
        assert math.isfinite(row.spread) and row.spread >= 0, row


def test_grpo_step_reports_finite_positive_throughput(bench):
    grpo = bench.grpo_throughput(bench.QUICK)
    assert finite_positive(grpo["tokens_per_s"]) and finite_positive(grpo["tokens_per_step"])
    assert 0 < grpo["sampling_share"] < 1
    assert 0 <= grpo["reward_mean"] <= 1


def test_quick_cli_prints_the_table_and_summary(bench, capsys):
    bench.main(["--quick"])
    out = capsys.readouterr().out
    _, _, batch = bench.make_batch(bench.QUICK)
    for case in bench.REFERENCES + bench.loss_cases(batch) + [bench.CHECK]:
        assert case.name in out
    assert "generated tokens/s" in out and out.rstrip().splitlines()[-1].startswith("Summary:")
