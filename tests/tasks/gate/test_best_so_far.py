import json
import math

import pytest

from tasks.gate.best_so_far import EvidenceRefused, best_so_far_gate
from tasks.gate.stats import paired_bootstrap_ci, sign_test_p


def test_accepts_paired_improvement_and_names_cases():
    out = best_so_far_gate({"a": 2.0, "b": 1.0, "c": 3.0}, {"a": 1.0, "b": 1.0, "c": 3.5}, {"v1"}, "v1", 0.0)
    assert out.decision == "accept"
    assert out.delta == pytest.approx((1.0 + 0.0 - 0.5) / 3)
    assert out.improved_cases == ["a"] and out.regressed_cases == ["c"]
    assert out.select_score == pytest.approx(2.0) and out.baseline_score == pytest.approx(5.5 / 3)
    assert out.n_cases == 3
    assert json.loads(out.evidence_json)["cases"] == ["a", "b", "c"]


def test_tie_and_tolerance_boundary_reject():
    tie = best_so_far_gate({"a": 1.0}, {"a": 1.0}, {"v"}, "v", 0.0)
    assert tie.decision == "reject" and tie.delta == 0.0 and tie.improved_cases == []
    at_boundary = best_so_far_gate({"a": 1.5}, {"a": 1.0}, {"v"}, "v", 0.5)
    assert at_boundary.decision == "reject"
    above = best_so_far_gate({"a": 1.5 + 1e-9}, {"a": 1.0}, {"v"}, "v", 0.5)
    assert above.decision == "accept"


def test_first_candidate_becomes_baseline_and_empty_evidence_rejects():
    first = best_so_far_gate({"a": 0.3}, None, {"v"}, "v", 0.0)
    assert first.decision == "accept" and first.baseline_score is None and first.select_score == 0.3
    empty = best_so_far_gate({}, {"a": 1.0}, set(), "v", 0.0)
    assert empty.decision == "reject" and empty.n_cases == 0


def test_evidence_from_another_scorer_is_refused():
    with pytest.raises(EvidenceRefused, match="anchored to 'v1'"):
        best_so_far_gate({"a": 9.0}, {"a": 1.0}, {"v1", "patched"}, "v1", 0.0)


def test_unpaired_evidence_is_an_error():
    with pytest.raises(ValueError, match="not paired"):
        best_so_far_gate({"a": 1.0}, {"b": 1.0}, {"v"}, "v", 0.0)


def test_bootstrap_ci_brackets_mean_and_degenerates():
    low, high = paired_bootstrap_ci([1.0, 2.0, 3.0, 4.0], seed=1)
    assert low <= 2.5 <= high and 1.0 <= low and high <= 4.0
    assert paired_bootstrap_ci([0.7]) == (0.7, 0.7)
    assert all(math.isnan(x) for x in paired_bootstrap_ci([]))


def test_sign_test_exact_values():
    assert sign_test_p([1, 1, 1, 1, 1]) == pytest.approx(2 / 32)
    assert sign_test_p([1, -1]) == 1.0
    assert sign_test_p([0, 0]) == 1.0
    assert sign_test_p([1, 1, 1, -1]) == pytest.approx(2 * 5 / 16)
