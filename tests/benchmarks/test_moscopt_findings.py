"""The moscopt findings script at a tiny size: the gate accepts only validation
improvements, so every gated arm ends at least at the seed's select success (the
paper's "monotonic" on accepted local edits), the seed arm accepts nothing, and the rows
are paired per seed."""

from benchmarks.moscopt_findings import ARMS, Setup, measure, rows_of


def test_findings_are_paired_and_validation_never_drops():
    found = measure(2, Setup(rounds=3, instances=5))
    for i in range(2):
        assert found["seed"][i]["accepted"] == 0
        for arm in ("moscopt", "freeze_g", "all_at_once"):
            assert found[arm][i]["select"] >= found["seed"][i]["select"]
            assert 0.0 <= found[arm][i]["test"] <= 1.0 and found[arm][i]["accepted"] <= 3
    rows = rows_of(found)
    assert len(rows) == len(ARMS) - 1 and all(len(r.differences) == 2 for r in rows)
