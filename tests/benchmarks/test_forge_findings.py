"""The forge findings script at one seed, 5 instances per template and 4 steps: every arm
on the same held-out tasks, the rows paired, the seed arm exactly the empty harness's
verdicts, and the no-synthesis arm generating nothing."""

from benchmarks.forge_findings import ARMS, COMPARISONS, HELDOUT, SEED_HARNESS, headline, measure, rows_of, scores
from suites.toolsim.suite import ToolSim


def test_findings_are_paired_on_the_same_held_out_tasks():
    found, costs = measure(seeds=1, instances=5, steps=4, patience=1)
    held = {c.case_id: c.payload for c in ToolSim(seed=0, instances_per_template=5).cases() if c.split in HELDOUT}
    assert all(len(found[arm]) == len(held) == 16 for arm in ARMS)
    assert found["seed"] == scores(held, SEED_HARNESS)
    assert costs["no_synthesis"]["gen"] == 0 and costs["seed"]["eval"] == 0
    assert costs["unverified"]["admitted"] == costs["unverified"]["gen"]
    assert costs["synthesis"]["admitted"] <= costs["synthesis"]["gen"]
    rows = rows_of(found)
    assert len(rows) == len(COMPARISONS) and all(len(r.differences) == 16 for r in rows)
    assert headline(found, costs).count("\n") == len(ARMS) + 1
