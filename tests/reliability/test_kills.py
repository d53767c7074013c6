"""20 SIGKILLs of a real `ratchet run` at seeded random points (a stage's crash point or
the process group at a random moment), each resumed with `ratchet resume`: every table
identical, row by row, to the run left alone."""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_twenty_killed_runs_resume_to_the_rows_of_the_uninterrupted_run(faults, tmp_path):
    outcomes = faults.kills(20, seed=7, base=tmp_path)
    assert len(outcomes) == 20
    for outcome in outcomes:
        if outcome.fault.startswith("failpoint"):
            assert outcome.code == -9, outcome  # each crash point really killed its run
        else:  # a timed kill can come after a fast run's exit: then it ran whole
            assert outcome.code in (-9, 0), outcome
        assert outcome.status == "finished", outcome
        assert outcome.differs == {}, outcome
    assert sum(o.code == -9 for o in outcomes) >= 17, outcomes  # timed kills do land, mostly


def test_kill_points_are_seeded_and_cover_stages_and_moments(faults):
    points = faults.kill_points(20, seed=7, reference_s=40.0)
    assert points == faults.kill_points(20, seed=7, reference_s=40.0)
    kinds = {kind for kind, _ in points}
    assert kinds == {"failpoint", "timed"}
    assert all(0.5 <= where <= 24.0 for kind, where in points if kind == "timed")
    assert {where.split(":")[0] for kind, where in points if kind == "failpoint"} <= {"sample", "execute", "register"}
