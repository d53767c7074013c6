"""rsi_anything's distill, gate, register and finish stages: a new policy from the
bandit update and the WM reliability check (adapting only when it flags a problem), the
compatibility gate on fresh validation draws, the accepted pair and the best program
registered, and the run's summary."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.rows import RegistryRow
from schemas.rsi_anything import PairCheckRow, RSIExecutionRow, WMVersionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.loops.rsi_anything.pair import Batch, bandit_update, fit_ridge, pair_gate, reliability, should_adapt
from tasks.loops.rsi_anything.stages import before_distill, best_of, draw, gains, policy_of, public_scores, put_artifact, \
    results, section, training_data, wm_of
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score

GATE = "rsi_pair"


def executed_by(ref: RunRef, r: int, field: str, version: str) -> list:
    """The selected (executed) children round `r`'s distill may see whose `field`
    (policy_ver / wm_ver) is `version`."""
    return [c for c in store_for(ref.store_uri).read_rows("rsi_candidates", ref.run_id)
            if getattr(c, field) == version and c.selected and before_distill(c, r)]


@task(name="distill", **STAGE_OPTIONS)
def distill(ref: RunRef, r: int, policy: str, wm: str) -> tuple[str, str]:
    """distill: the bandit update of the active policy from its own executed children,
    and the WM reliability check on this round's candidates (one `wm_versions` row); the
    WM is refit on every executed child only when the check says unreliable, the pairs
    suffice and the arm adapts. Returns (new policy id, new WM id), "" for an unchanged part."""
    s, key, known = section(ref), f"r{r:04d}", gains(ref)
    outcomes = [(c.operator, known[(c.cand_id, c.parent_id)]) for c in executed_by(ref, r, "policy_ver", policy)
                if (c.cand_id, c.parent_id) in known]
    new = bandit_update(policy_of(ref, policy), outcomes, s.policy_lr, s.policy_floor, s.gain_clip)
    new_policy = "" if new == policy_of(ref, policy) else put_artifact(
        ref, r, "policy", new.code(), [policy], "bandit", "distill", f"{key}-policy")
    current = [c.operator for c in store_for(ref.store_uri).read_rows("rsi_candidates", ref.run_id)
               if c.phase == "online" and c.round == r]
    pairs = [(c.pred_gain, known[(c.cand_id, c.parent_id)]) for c in executed_by(ref, r, "wm_ver", wm)
             if (c.cand_id, c.parent_id) in known]
    old = wm_of(ref, wm)
    check = reliability(pairs, set(old.train_ops), current, s.min_pairs, s.max_calib_error, s.min_coverage)
    xs, ys = training_data(ref, r)
    refit = fit_ridge(xs, ys, s.ridge_lambda) if s.wm == "adaptive" and should_adapt(check, len(ys), s.min_pairs) \
        else None
    new_wm = "" if refit is None or refit == old else put_artifact(
        ref, r, "world_model", refit.code(), [wm], "refit", "distill", f"{key}-wm")
    rows = [WMVersionRow(run_id=ref.run_id, round=r, ver=wm, parent=None, train_pairs=old.train_pairs,
                         calib_error=check.calib_error, coverage=check.coverage, n_pairs=check.n_pairs,
                         status=check.status)]
    if new_wm:
        rows.append(WMVersionRow(run_id=ref.run_id, round=r, ver=new_wm, parent=wm, train_pairs=refit.train_pairs,
                                 calib_error=None, coverage=0.0, n_pairs=0, status="candidate"))
    once(ref, "wm_versions", "distill", key, lambda: rows)
    return new_policy, new_wm


def batches(ref: RunRef, r: int, which: str, parent: str, policy: str, wm: str) -> tuple[list[Batch], list[str]]:
    """`val_batches` fresh draws of the policy (seeds shared by old and new), all executed."""
    s, out, ids = section(ref), [], []
    for b in range(s.val_batches):
        key = f"r{r:04d}-{which}-b{b}"
        rows = draw(ref, r, "validate", b, parent, policy, wm, s.val_children,
                    seed_for(run_config(ref).seed, "validate", r, b), key)
        known = {e.cand_id: e.gain for e in results(ref, r, "validate", rows, key)}
        out.append(Batch(tuple(tuple(c.features) for c in rows), tuple(known[c.cand_id] for c in rows)))
        ids += [c.cand_id for c in rows]
    return out, ids


def pair_id(ref: RunRef, r: int, policy: str, wm: str, key: str) -> str:
    return put_artifact(ref, r, "pair", json.dumps({"policy": policy, "wm": wm}, sort_keys=True), [policy, wm],
                        "pair", "gate", key)


@task(name="gate", **STAGE_OPTIONS)
def gate(ref: RunRef, r: int, policy: str, wm: str, new_policy: str, new_wm: str,
         incumbent: str) -> tuple[str, str, str]:
    """gate: validate the new policy and the new WM separately on fresh draws, assemble
    the passing parts and compare the assembled pair against the old pair (mode `pair`;
    `parts` keeps whatever passed). One `pair_checks` and one `rsi_pair` gate row with
    the evidence. Returns (policy, WM, incumbent) after the decision."""
    if not new_policy and not new_wm:
        return policy, wm, incumbent
    s, key = section(ref), f"r{r:04d}"
    old_b, old_ids = batches(ref, r, "old", incumbent, policy, wm)
    new_b, new_ids = batches(ref, r, "new", incumbent, new_policy, wm) if new_policy else (None, [])
    accept, keep_policy, keep_wm, ev = pair_gate(wm_of(ref, wm), wm_of(ref, new_wm) if new_wm else None, old_b,
                                                 new_b, s.gate, s.margin)
    assembled = (new_policy if ev["policy_part"] else policy, new_wm if ev["wm_part"] else wm)
    old_pair, new_pair = pair_id(ref, r, policy, wm, f"{key}-old"), pair_id(ref, r, *assembled, f"{key}-new")
    decision = derived_id(ref.run_id, r, new_pair, GATE)
    reason = (f"policy part {'passed' if ev['policy_part'] else 'failed'}, WM part "
              f"{'passed' if ev['wm_part'] else 'failed'}; assembled pair's picks gain {ev['metric_new']:+.4f} vs "
              f"old pair {ev['metric_old']:+.4f} on {len(old_b)} draws ({s.gate} gate)")
    once(ref, "gate_decisions", "gate", key, lambda: [decision_row(
        ref, r, new_pair, GATE, old_pair, GateOutcome(
            decision="accept" if accept else "reject", reason=reason, improved_cases=[], regressed_cases=[],
            select_score=ev["metric_new"], baseline_score=ev["metric_old"], delta=ev["delta"], ci_low=ev["ci"][0],
            ci_high=ev["ci"][1], n_cases=len(old_b),
            evidence_json=json.dumps({**ev, "policy": policy, "wm": wm, "new_policy": new_policy, "new_wm": new_wm},
                                     sort_keys=True)),
        id_parts=(r, new_pair, GATE), scorer_version=run_suite(ref).scorer_version())])
    once(ref, "pair_checks", "gate", key, lambda: [PairCheckRow(
        run_id=ref.run_id, round=r, policy_ver=assembled[0], wm_ver=assembled[1], old_policy_ver=policy,
        old_wm_ver=wm, policy_part=ev["policy_part"], wm_part=ev["wm_part"], metric_new=ev["metric_new"],
        metric_old=ev["metric_old"], accepted=accept, decision_id=decision)])
    reporter().advance(0, f"gate {r}")
    return (new_policy if keep_policy else policy, new_wm if keep_wm else wm,
            best_of(ref, incumbent, old_ids + new_ids))


def registry_row(ref: RunRef, what: str, candidate_id: str, decision_id: str, version: int,
                 select: float | None = None, holdout: float | None = None) -> RegistryRow:
    return RegistryRow(run_id=ref.run_id, name=f"{run_config(ref).suite}/rsi_anything-{what}", version=version,
                       candidate_id=candidate_id, stage="stable", alias="champion", decision_id=decision_id,
                       select_score=select, holdout_score=holdout, event_at=datetime.now(timezone.utc))


@task(name="register", **STAGE_OPTIONS)
def register_pair(ref: RunRef, r: int, policy: str, wm: str, previous: tuple[str, str]) -> None:
    """register: the pair (round 0's, or one the gate accepted) becomes the
    `<suite>/rsi_anything-pair` champion; an unchanged pair registers nothing."""
    if r and (policy, wm) == tuple(previous):
        return
    key = f"r{r:04d}"
    pid = pair_id(ref, r, policy, wm, f"{key}-new" if r else "r0000-old")
    decision = derived_id(ref.run_id, r, pid, GATE) if r else ""
    version = 1 + sum(1 for g in store_for(ref.store_uri).read_rows("registry", ref.run_id) if g.name.endswith("-pair"))
    once(ref, "registry", "register", key, lambda: [registry_row(ref, "pair", pid, decision, version)])


@task(name="finish", **STAGE_OPTIONS)
def finish(ref: RunRef, incumbent: str, policy: str, wm: str) -> dict:
    """The best public program registered as `<suite>/rsi_anything-best` with its hidden
    (holdout) score, and the run's counts."""
    store = store_for(ref.store_uri)
    select = public_scores(ref)[incumbent]
    hidden = holdout_score(ref, incumbent)
    once(ref, "registry", "register", "best", lambda: [registry_row(ref, "best", incumbent, "", 1, select, hidden)])
    once(ref, "rsi_executions", "final", "best", lambda: [RSIExecutionRow(
        run_id=ref.run_id, round=-1, phase="final", cand_id=incumbent, parent_id=incumbent, online_score=select, parent_score=select,
        gain=0.0, hidden_score=hidden, test_calls=0)])
    execs = store.read_rows("rsi_executions", ref.run_id)
    checks = store.read_rows("pair_checks", ref.run_id)
    return {"best": incumbent[:16], "select": select, "hidden": hidden, "policy": policy[:16], "wm": wm[:16],
            "online_calls": sum(e.test_calls for e in execs if e.phase == "online"),
            "validation_calls": sum(e.test_calls for e in execs if e.phase == "validate"),
            "checks": len(checks), "accepted": sum(c.accepted for c in checks)}
