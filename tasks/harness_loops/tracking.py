"""MLflow tracking of a harness loop's gate decision: the candidate as a nested run."""

from __future__ import annotations

from schemas.rows import CandidateRow, GateDecisionRow, RegistryRow
from tasks.runtime.context import RunRef, store_for, tracker_for


def track_candidate(ref: RunRef, decision: GateDecisionRow, registered: RegistryRow | None) -> None:
    """Log the decision's candidate as a nested MLflow run: its proposal as params, the
    gate's scores as metrics (holdout only once registered), the harness as artifact."""
    store = store_for(ref.store_uri)
    candidate: CandidateRow = next(c for c in store.read_rows("candidates", ref.run_id)
                                   if c.candidate_id == decision.candidate_id)
    gated = {"gate_score": decision.select_score, "baseline_score": decision.baseline_score, "delta": decision.delta,
             "ci_low": decision.ci_low, "ci_high": decision.ci_high, "n_cases": float(decision.n_cases),
             "holdout_success": registered.holdout_score if registered else None}
    tracker_for(ref).log_candidate(
        ref.run_id, candidate.candidate_id,
        params={"operator": candidate.operator, "proposer": candidate.proposer, "round": str(candidate.round),
                "parents": ",".join(p[:12] for p in candidate.parent_ids)},
        metrics={k: v for k, v in gated.items() if v is not None},
        tags={"gate": decision.gate, "decision": decision.decision},
        artifact=store.get_blob(candidate.candidate_id), artifact_name="harness.py",
    )


def track_version(ref: RunRef, decision: GateDecisionRow, artifact_name: str) -> None:
    """A gated version (a memory, a prompt) as a nested MLflow run: its round and parent
    as params, the gate's select score, baseline, delta and CI as metrics, its decision as
    tags, its stored content as ``artifact_name``."""
    gated = {"select_success": decision.select_score, "baseline": decision.baseline_score, "delta": decision.delta,
             "ci_low": decision.ci_low, "ci_high": decision.ci_high}
    tracker_for(ref).log_candidate(
        ref.run_id, decision.candidate_id, params={"round": str(decision.round), "parent": decision.baseline_id[:12]},
        metrics={k: v for k, v in gated.items() if v is not None},
        tags={"gate": decision.gate, "decision": decision.decision},
        artifact=store_for(ref.store_uri).get_blob(decision.candidate_id), artifact_name=artifact_name)
