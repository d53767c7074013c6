"""The skilllift findings script at a tiny size: one round uses the seed rubric in every
rubric arm (calibration acts from round 2), so their results agree exactly; the inner loop
spends no real episode, so skilllift's episodes are the select cases times the skills it
ran; the budget-matched baseline never spends more than skilllift."""

from benchmarks.skilllift_findings import ARMS, Knobs, World, measure, rows_of


def test_findings_are_paired_and_one_round_arms_agree():
    knobs = Knobs(rounds=1, inner_iterations=3, proposals=2, top_k=2, instances=5)
    found = measure(2, knobs)
    select = len(World(0, 5).split["select"])
    for i in range(2):
        same = [{**found[arm][i], "tau": repr(found[arm][i]["tau"])} for arm in ("skilllift", "frozen", "regression")]
        assert same[0] == same[1] == same[2]
        assert found["skilllift"][i]["episodes"] == select * (1 + knobs.top_k)
        assert found["real_matched"][i]["episodes"] <= found["skilllift"][i]["episodes"]
        assert found["real_every"][i]["checks"] == 0 and 0.0 <= found["real_every"][i]["holdout"] <= 1.0
    rows = rows_of(found)
    assert len(rows) == (len(ARMS) - 1) * 2 and all(len(r.differences) == 2 for r in rows)
