"""Smoke test of benchmarks/sql_scale.py at a tiny size: the store is built through the
project's writers, compacted with `ratchet compact`, and every query gets a time and a
ratio on both sides, before and after compaction."""

import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sql_scale.py"

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROW = re.compile(r"^(?P<name>.+?)\s+(?P<phase>\d+ parts|compacted, \d+)\s+(?P<numbers>(?:\d+\.\d+\s*){6})$")


def test_a_tiny_store_prints_every_query_with_both_times_and_ratios(bench, tmp_path, capsys):
    store = tmp_path / "store"
    lines = bench.main(["--small", "--store", str(store)])
    text = capsys.readouterr().out
    rows = [m for m in map(ROW.match, lines) if m]
    assert {(m["name"], m["phase"].startswith("compacted")) for m in rows} == {
        (name, compacted) for name in (bench.FIRST, *bench.QUERIES) for compacted in (False, True)}, text
    cpu = {(m["name"], m["phase"].startswith("compacted")): float(m["numbers"].split()[3]) for m in rows}
    for compacted in (False, True):  # after the first query, the light path (cached view statements) answers
        assert cpu[(bench.FIRST, compacted)] > cpu[("count runs", compacted)], text
    for match in rows:
        ours, bare, ratio, ours_cpu, bare_cpu, cpu_ratio = map(float, match["numbers"].split())
        assert ours > 0 and bare > 0 and ratio == pytest.approx(ours / bare, rel=0.05, abs=0.02)
        assert cpu_ratio == pytest.approx(ours_cpu / bare_cpu, rel=0.05, abs=0.02)
    assert "small queries, worst ratio after compaction" in text and "group-by over scores after compaction" in text
    assert "20,000 of 20,000 score rows" in text
    assert re.search(r"ratchet compact of 2 runs: .* now \d+ parts", text)

    from storage.store import open_store

    opened = open_store(str(store))
    assert opened.read("scores").num_rows == 20_000
    assert all(len(opened.part_files("scores", run)) == 1 for run in opened.run_ids("scores"))


def test_the_shape_spreads_the_rows_over_runs_rounds_candidates_cases_and_metrics(bench):
    shape = bench.Shape.for_rows(10_000_000, runs=4, rounds=50, children=40)
    assert (shape.cases, shape.score_rows) == (625, 10_000_000)
