"""benchmarks/llm_vs_mutate.py at its smallest against the served model: every arm runs
the real flow, and the figures the report prints are the ones read back from the runs."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.integration]
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "llm_vs_mutate.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("benchmark_llm_vs_mutate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_one_seed_of_each_arm_is_measured_and_reported(bench, prefect_server, served, tmp_path):
    sizes = bench.Sizes(budget=1, children_per_round=1, max_tokens=32, heal_rounds=1, heal_seeds=1)
    evolve_runs, heal_runs = bench.measure(str(tmp_path), sizes, minutes=0.0, max_seeds=1)
    assert sorted((r.suite, r.proposer) for r in evolve_runs) == [
        ("bin_packing", "llm"), ("bin_packing", "mutate"), ("circle_packing", "llm"), ("circle_packing", "mutate")]
    assert sorted(r.proposer for r in heal_runs) == ["llm", "rule"]
    for run in (*evolve_runs, *heal_runs):
        assert run.children >= 1 and run.select is not None and run.wall_s > 0
        if run.proposer == "llm":  # one call per child, each with its tokens read back from the summary
            assert len(run.tokens_in) == len(run.tokens_out) == run.children and 0 < max(run.tokens_out) <= 32
        else:
            assert run.usable == run.children and run.tokens_out == ()
    text = bench.report(evolve_runs, heal_runs, sizes, served.served.model)
    assert "| evolve | bin_packing | llm | 1 |" in text and "| self_healing | toolsim | rule | 1 |" in text
    assert text.count("| evolve circle_packing | ") == 2 and text.count("| self_healing toolsim | ") == 2
