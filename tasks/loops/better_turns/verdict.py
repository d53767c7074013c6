"""gate of the protocol: every layer apart, SFT − base paired over conversations with
its 95% CI and the measured noise floor, and per checkpoint where turn scores and
workflow completion disagree; and the run's summary. Nothing is promoted: ``accept``
records that a CI excludes 0 (an effect shown), ``reject`` that it does not (no
difference shown, not equivalence). Each row's evidence names what it was computed from."""

from __future__ import annotations

import math
from dataclasses import asdict

from prefect import task

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rows import decision_row
from tasks.loops.better_turns.analysis import LAYERS, Comparison, Disagreement, compare_layer, disagreement
from tasks.loops.better_turns.stages import CHECKPOINTS, protocol_of, recorded
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS


@task(name="gate", **STAGE_OPTIONS)
def compare(ref: RunRef, checkpoints: list[dict[str, str]]) -> list[GateDecisionRow]:
    """gate: one row per layer (SFT − base) and one per checkpoint (turns vs workflow)."""
    return once(ref, "gate_decisions", "gate", "protocol", lambda: _decisions(ref, checkpoints))


def _decisions(ref: RunRef, checkpoints: list[dict[str, str]]) -> list[GateDecisionRow]:
    config = protocol_of(ref)
    section, (decisions, closed) = config.better_turns, recorded(ref)
    base_id, sft_id = checkpoints[0]["base"], checkpoints[0]["sft"]
    rows = []
    for layer in LAYERS:
        found = compare_layer(layer, decisions, closed, section.resamples, config.seed)
        rows.append(_row(ref, sft_id, base_id, f"sft-base:{layer}", found.delta, found.ci, found.n_cases,
                         _layer_reason(found), asdict(found) | {"checkpoints": checkpoints}))
    for ckpt in CHECKPOINTS:
        found = disagreement(ckpt, decisions, closed, section.high_sim, section.resamples, config.seed)
        ids = [c[ckpt] for c in checkpoints]
        rows.append(_row(ref, ids[0], None, f"turns-vs-workflow:{ckpt}", found.gap, found.gap_ci, found.n_cases,
                         _disagreement_reason(found, section.high_sim),
                         asdict(found) | {"candidate_ids": ids, "high_sim": section.high_sim}))
    return rows


def _shown(ci: tuple[float, float]) -> bool:
    return not any(math.isnan(x) for x in ci) and not (ci[0] <= 0.0 <= ci[1])


def _layer_reason(found: Comparison) -> str:
    floor = ("no noise floor (one model)" if math.isnan(found.noise_floor) else
             f"noise floor {found.noise_floor:.3f} (largest gap between two models of one checkpoint): "
             + ("inside it" if found.inside_floor else "outside it"))
    verdict = "shows a difference" if _shown(found.ci) else "includes 0: no difference shown (not equivalence)"
    return (f"{found.layer}: base {found.base:.3f} -> sft {found.sft:.3f}, sft − base {found.delta:+.3f} over "
            f"{found.n_cases} conversations, 95% CI [{found.ci[0]:+.3f}, {found.ci[1]:+.3f}] {verdict}; {floor}")


def _disagreement_reason(found: Disagreement, high_sim: float) -> str:
    return (f"{found.ckpt}: exact turns on the gold history {found.turn_success:.3f} vs closed-loop completion "
            f"{found.completion:.3f}, gap {found.gap:+.3f} 95% CI [{found.gap_ci[0]:+.3f}, {found.gap_ci[1]:+.3f}] "
            f"over {found.n_cases} conversations; Spearman(mean L1 similarity, completed) "
            f"{found.rank_agreement:+.3f}; {len(found.high_sim_incomplete)} of {found.high_sim_runs} runs with mean "
            f"similarity >= {high_sim:.2f} did not complete; {len(found.other_paths)} runs succeeded holistically "
            f"without the reference's calls (paths exact match undercounts)")


def _row(ref: RunRef, candidate_id: str, baseline_id: str | None, gate: str, delta: float,
         ci: tuple[float, float], n: int, reason: str, evidence: dict) -> GateDecisionRow:
    outcome = GateOutcome(
        decision="accept" if _shown(ci) else "reject", reason=reason, improved_cases=[], regressed_cases=[],
        select_score=None, baseline_score=None, delta=json_safe(delta), ci_low=json_safe(ci[0]),
        ci_high=json_safe(ci[1]), n_cases=n, evidence_json=dump_evidence(json_safe(evidence)))
    return decision_row(ref, 0, candidate_id, gate, baseline_id, outcome, id_parts=(gate,))


def protocol_summary(ref: RunRef) -> dict[str, object]:
    """The table the CLI prints: one line per gate row."""
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "protocol")
    return {"run_id": ref.run_id, **{row.gate: row.reason for row in rows}}
