"""The GAI findings on a short run: the manifest tells the three circle_packing variants
apart, the anchored variant's internal and external scores agree on every version, the
drifting one gains only internally, and a claim that does not hold is reported as such."""

from pathlib import Path

from schemas.loops import LOOP_SPECS

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gai_findings.py"


def test_anchored_versions_agree_and_drifting_ones_gain_only_internally(bench):
    findings = bench
    anchored, gates = findings.evolve_variant("anchored", seed=0, n=6, steps=150)
    assert len(anchored) > 1 and all(v.internal_score == v.external_score for v in anchored)
    assert set(gates) == {"tol=1e-09"}
    drifting, gates = findings.evolve_variant("drifting", seed=0, n=6, steps=150)
    assert len(set(gates)) > 1
    assert any(v.external_score == 0.0 < v.internal_score for v in drifting)
    assert all(v.internal_score >= v.external_score for v in drifting)


def test_the_three_variants_are_classified_apart_and_the_claims_read_their_rows(bench):
    findings = bench
    found = findings.measure(seeds=2, n=6, steps=150)
    assert [found[v]["classes"] for v in findings.VARIANTS] == [
        ["GPI/anchored"], ["GPI/goal-drifting"], ["RSI/self-referential"]]
    assert found["anchored"]["gaps"] == [0.0, 0.0] and found["anchored"]["drift_labels"] == 0
    held = dict(findings.claims(found))
    assert held["the audit places (a) GPI/anchored, (b) GPI/goal-drifting, (c) RSI/self-referential"]
    no_drift = {**found, "drifting": {**found["drifting"], "gap_ci": (0.0, 0.3)}}
    assert not dict(findings.claims(no_drift))["drifting: a gain seen only internally (gap CI above 0)"]
    text = findings.report(no_drift, {"GPI/anchored": 1}, "test")
    assert "[not reproduced] drifting: a gain seen only internally" in text


def test_the_project_manifest_counts_every_loop_but_gai(bench):
    findings = bench
    assert findings.project_manifest(None) == {"GPI/anchored": len(LOOP_SPECS) - 2, "RSI/anchored": 1}
