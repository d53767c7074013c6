"""The cover findings script on one problem at a tiny size: every arm is measured on the
same (seed, problem) pairs; with no training step the arms that share a filter are the
same policies on the same streams, so their paired differences are exactly 0."""

from benchmarks.cover_findings import ARMS, METRICS, build_problems, measure, rows_of


def test_findings_are_paired_and_untrained_arms_agree():
    problems = build_problems(1, pool_size=3, case_timeout_s=0.3)
    assert problems[0].gt_pass(0, "holdout") == 1.0  # the original, run in the sandbox, passes its GT tests
    untrained = measure(problems, seeds=2, steps=0, programs=4, tests=6)
    for metric in METRICS:
        assert untrained["cover"][metric] == untrained["pass_rate"][metric] == untrained["uniform_ops"][metric]
        assert len(untrained["no_filter"][metric]) == 2
    trained = measure(problems, seeds=2, steps=1, programs=4, tests=6)
    rows = rows_of(trained)
    assert len(rows) == (len(ARMS) - 1) * len(METRICS)
    assert all(len(r.differences) == 2 and all(0.0 <= x <= 1.0 for x in r.a + r.b) for r in rows)
