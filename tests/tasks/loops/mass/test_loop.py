import pytest

from suites.toolsim.suite import ToolSim
from tasks.loops.mass.loop import Execution, distill, generation, judge, run_workflow, tally
from tasks.loops.mass.workflow import Workflow, decisions


def ex(case_id, success, calls):
    return Execution(case_id, "t", success, calls, 0, ())


def test_the_judge_prefers_success_then_fewer_calls():
    assert judge(ex("c", True, 9), ex("c", False, 2)) == "a"
    assert judge(ex("c", True, 5), ex("c", True, 3)) == "b"
    assert judge(ex("c", False, 4), ex("c", False, 4)) == "tie"
    a = [ex("1", True, 3), ex("2", False, 3), ex("3", True, 3), ex("4", True, 1)]
    b = [ex("1", False, 3), ex("2", False, 3), ex("3", True, 2)]  # case 4 unpaired: left out
    assert tally(a, b) == (1, 1, 1)


@pytest.fixture(scope="module")
def train():
    return [c for c in ToolSim(instances_per_template=2).cases() if c.split == "train"]


def test_a_generation_keeps_the_child_with_most_net_wins_if_not_worse(train):
    seed = Workflow()
    retry = Workflow(("retrier",), ("error_code",))
    idle = Workflow(("retrier",))  # the planner returns no error_code: the retrier cannot act
    g = generation(seed, train, lambda p, runs, gen: [("add_role", idle), ("add_field", retry)], 1)
    assert set(g.executions) == {seed.wf_id, idle.wf_id, retry.wf_id}
    assert g.tallies[idle.wf_id] == (0, 0, len(train))  # same harness as the seed: every case ties
    wins, losses, ties = g.tallies[retry.wf_id]
    assert wins + losses + ties == len(train)
    expected = retry if wins - losses > 0 else idle  # idle's net 0 is kept when no child is better
    assert g.chosen == expected
    worse = generation(seed, train, lambda p, runs, gen: [], 2)
    assert worse.chosen == seed and worse.tallies == {}


def test_distilled_examples_are_successful_runs_without_the_workflow(train):
    lineage = [Workflow(), Workflow(("retrier", "refunder"), ("error_code", "order_state"))]
    examples, runs = distill(lineage, train, repeats=2, seed=0)
    assert runs == len(train) * 2 * len(lineage)
    by_wf = {wf.wf_id: wf for wf in lineage}
    for e in examples:
        assert e.target == decisions(by_wf[e.wf_id])
        assert e.template == e.case_id.split("/")[0]
    first = {e.case_id: e for e in examples if e.repeat == 0}
    seed_runs = {r.case_id: r for r in run_workflow(lineage[0], train)}
    later_runs = {r.case_id: r for r in run_workflow(lineage[1], train)}
    for case_id, e in first.items():  # the later workflow is kept on a tie: the seed only when strictly better
        expected = lineage[0] if judge(seed_runs[case_id], later_runs[case_id]) == "a" else lineage[1]
        assert e.wf_id == expected.wf_id
    assert len(examples) <= len(train) * 2
