"""The dense findings script at one instance per template and one repeat: every arm on
the same tasks, the rows paired, and where the initial attempt passed the labelled
reference makes no edit, so its retry is exactly the no-feedback retry (same harness,
same noise)."""

from benchmarks.dense_findings import METHODS, headline, measure, rows_of


def test_findings_are_paired_on_the_same_tasks():
    found = measure(instances=1, repeats=1)
    tasks = sorted(found["initial"])
    assert len(tasks) == 8 and all(sorted(found[m]) == tasks for m in METHODS)
    passed = [t for t in tasks if found["initial"][t][0] == 1.0]
    assert passed and all(found["labelled"][t] == found["none"][t] for t in passed)
    rows = rows_of(found)
    assert len(rows) == 2 * len(METHODS) + 2 * 5
    assert all(len(r.differences) == 8 for r in rows)
    assert all(0.0 <= x <= 1.0 for r in rows if r.metric == "strict pass" for x in r.a + r.b)
    assert headline(found).count("\n") == len(METHODS) + 2
