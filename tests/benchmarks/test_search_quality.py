import math

import benchmarks.search_quality as bench
import benchmarks.search_quality_circles as circles
from suites.bin_packing import SEED_PROGRAM, BinPacking
from suites.circle_packing import SEED_PROGRAM as CIRCLE_SEED
from tasks.proposers.base import ProposerError
from tasks.proposers.grammar_proposer import GrammarProposer


def test_quick_run_prints_the_paired_table_per_dataset(capsys):
    bench.main(["--quick", "--part", "bin_packing"])
    out = capsys.readouterr().out
    assert "6 evaluations per method per seed, 2 search instances, 2 seeds" in out
    rows = [line for line in out.splitlines() if line.startswith("| or1 holdout")]
    assert len(rows) == 2 and "best fit" in rows[0] and "mutate" in rows[1]


def test_search_spends_exactly_its_evaluations_and_best_fit_matches_the_seed():
    evaluator = bench.Evaluator(BinPacking(datasets=("or1",)), 1)
    calls = []
    original = evaluator.search_excess
    evaluator.search_excess = lambda program: calls.append(program) or original(program)
    best, used = bench.search("grammar", evaluator, 5, seed=0)
    assert used == 5 == len(calls) and calls[0] == SEED_PROGRAM
    assert evaluator.holdout_excess(bench.BEST_FIT) == evaluator.holdout_excess(SEED_PROGRAM)
    assert math.isfinite(original(best)) and original(best) <= original(SEED_PROGRAM)


def test_a_search_whose_draws_all_fail_stops_after_the_cap(monkeypatch):
    def refuse(self, parents, rng, failure_memory=(), history=()):
        raise ProposerError("no edit applies")

    monkeypatch.setattr(GrammarProposer, "propose", refuse)
    evaluator = bench.Evaluator(BinPacking(datasets=("or1",)), 1)
    assert bench.search("grammar", evaluator, 50, seed=0) == (SEED_PROGRAM, 1)
    circle_evaluator = circles.CircleEvaluator()
    best, _, _ = circles.search(circle_evaluator, 50, seed=0)
    assert best == CIRCLE_SEED


def test_quick_run_prints_the_circle_packing_row_against_random_restart_slsqp(capsys):
    bench.main(["--quick", "--part", "circle_packing"])
    out = capsys.readouterr().out
    assert "circle_packing n=26, 4 evaluations per seed for grammar" in out and "2 seeds" in out
    (row,) = [line for line in out.splitlines() if line.startswith("| circle_packing n=26")]
    assert "random-restart SLSQP" in row and "grammar" in row
    assert "best known 2.6359830849" in out
    assert len([line for line in out.splitlines() if line.startswith("- seed ")]) == 2


def test_circle_search_spends_exactly_its_evaluations_from_the_seed():
    evaluator = circles.CircleEvaluator()
    calls = []
    original = evaluator.sum_radii
    evaluator.sum_radii = lambda program: calls.append(program) or original(program)
    best, value, _ = circles.search(evaluator, 3, seed=0)
    assert len(calls) == 3 and calls[0] == CIRCLE_SEED
    assert value == original(best) >= 2.2592  # the seed's 2.2593 at least, re-scored in the sandbox


def test_random_restart_slsqp_finds_a_valid_packing_in_half_a_second():
    best, restarts = circles.random_restart_slsqp(0.5, seed=0)
    assert restarts >= 1 and 2.0 < best < 2.6359830849
