"""The pure parts of benchmarks/llm_vs_mutate.py: the per-proposer table from hand-built runs."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "llm_vs_mutate.py"


def run(bench, proposer, seed, select, usable, tokens_out=()):
    return bench.Run("evolve", "bin_packing", proposer, seed, select, select - 1.0, 4, usable, (400,) * len(tokens_out),
                     tuple(tokens_out), 20.0)


def test_the_table_pools_seeds_and_the_paired_rows_are_llm_minus_mutate(bench):
    runs = [run(bench, "mutate", 0, -5.0, 4), run(bench, "mutate", 1, -4.0, 4),
            run(bench, "llm", 0, -4.5, 1, (100, 200)), run(bench, "llm", 1, -4.0, 3, (60,))]
    lines = bench.suite_table(runs).splitlines()
    assert lines[2] == "| evolve | bin_packing | llm | 2 | -4.2500 | -5.2500 | 4/8 | 400.0 | 120.0 | 5.0 |"
    assert lines[3] == "| evolve | bin_packing | mutate | 2 | -4.5000 | -5.5000 | 8/8 | - | - | 5.0 |"
    paired = bench.paired_table(runs, "mutate", "llm", "evolve", ["bin_packing"]).splitlines()
    assert paired[2].startswith("| evolve bin_packing | select | mutate -4.500 | llm -4.250 | +0.250 [")
    assert paired[3].startswith("| evolve bin_packing | holdout | mutate -5.500 | llm -5.250 | +0.250 [")
