"""The rsiagent findings script at one seed, 5 instances per template and 2 rounds: every
arm on the same target tasks, the rows paired, the no-memory arm exactly the empty
harness's verdicts, and practice only ever on train templates' cells."""

from benchmarks.rsiagent_findings import ARMS, COMPARISONS, headline, measure, per_task, prepare, rows_of
from suites.toolsim.suite import ToolSim


def test_findings_are_paired_on_the_same_target_tasks():
    found = measure(seeds=1, instances=5, rounds=2, breadth_rounds=1, tasks=4)
    test = [c for c in ToolSim(seed=0, instances_per_template=5).cases() if c.split == "test"]
    assert all(len(found[arm]) == len(test) == 8 for arm in ARMS)
    assert found["none"] == per_task(test, [])
    rows = rows_of(found)
    assert len(rows) == 2 * len(COMPARISONS) and all(len(r.differences) == 8 for r in rows)
    assert all(0.0 <= x <= 1.0 for r in rows for x in r.a + r.b)
    assert headline(found).count("\n") == len(ARMS) + 1


def test_breadth_snapshot_is_the_frozen_memory_when_every_round_is_breadth():
    suite = ToolSim(seed=1, instances_per_template=5)
    frozen, breadth, seen = prepare(suite, 1, rounds=2, breadth_rounds=2, tasks=8, params=1)
    assert frozen == breadth and len(seen) == 8  # stratified: 8 slots cover the 8 templates
    assert all(e.source_runs for e in frozen)
