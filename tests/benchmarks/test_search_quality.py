import ast
import math

import benchmarks.search_quality as bench
from suites.bin_packing import SEED_PROGRAM, BinPacking
from tasks.proposers import grammar


def test_quick_run_prints_the_paired_table_per_dataset(capsys):
    bench.main(["--quick"])
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


def test_tpe_trials_keep_the_structure_and_the_signs():
    source = grammar.render(ast.parse("-gap + 0.5 * item", mode="eval").body)
    tried = bench.tune_constants(source, lambda program: 0.0, 4, seed=1)
    assert len(tried) == 4
    for program, _ in tried:
        (c,) = grammar.constants_of(grammar.parse(program))
        assert 0.125 <= c.value <= 2.0
        assert grammar.parse(program) is not None
