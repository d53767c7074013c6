"""The rpmem findings script at one seed and a tiny size: every arm on the same holdout
users, recall in [0, 1], rows paired per user, and the two stages' arms agreeing where
they must (after one session from an empty memory the merge arm's decoder differs from
the last-session arm's only through the gate)."""

from benchmarks.rpmem_findings import ARMS, curve, measure, rows_of


def test_findings_are_paired_on_the_same_holdout_users():
    found = measure(1, 4, 2, 5, 2, 2, n_keys=3, updates=2, d_mem=8, rank=2, batch=4)
    assert set(found) == {*ARMS, "reuse", "scratch"}
    assert all(len(found[a]) == 4 and all(len(u) == 2 for u in found[a]) for a in found)
    assert all(0.0 <= x <= 1.0 for a in found for u in found[a] for x in u)
    assert all(abs(x * 3 - round(x * 3)) < 1e-6 for u in found["rpmem"] for x in u)  # 3 keys per user
    rows = rows_of(found)
    assert len(rows) == 2 * 2 + 2 and all(len(r.differences) == 4 for r in rows)
    assert curve(found).count("\n") == 2 + 1
