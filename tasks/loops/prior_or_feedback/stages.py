"""Stage tasks of the prior_or_feedback protocol: publish the config space, run one
search (sample -> execute -> score -> distill, 20 times; the best-validation config
tested once on the holdout), replay it under interventions (b)-(d), and the verdict
per proposer (gate_decisions with their evidence; nothing is registered).

Each search is one part per table keyed by its ``search_id`` (sha256 of condition, seed,
proposer and search settings); ``pof_final_test`` is published last, so a search whose
final test is there is complete and a rerun writes nothing new. The configs are numbers
our own proposers produced, not programs: they run in-process through the suite's runner
and trusted scorer (suites/pde1d/trials.py)."""

from __future__ import annotations

import json

from prefect import task

from schemas.ids import derived_id
from schemas.prior_or_feedback import PofConfigSpaceRow, PofFinalTestRow, PofReplayRow, PofRunRow, PofTrialRow
from schemas.rows import GateDecisionRow
from suites.pde1d.space import CONFIG_SPACE
from suites.pde1d.suite import Pde1d
from suites.pde1d.trials import split_nrmse
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.loops.prior_or_feedback import protocol
from tasks.loops.prior_or_feedback.measures import evidence, reason
from tasks.loops.prior_or_feedback.protocol import task_of
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

SIZES = ("train", "select", "holdout", "per_case")


def search_id(ref: RunRef, condition: str, seed: int, proposer: str) -> str:
    c = run_config(ref)
    s = c.prior_or_feedback
    return derived_id(condition, seed, proposer, s.trials, s.tpe_startup, c.proposer,
                      json.dumps({k: c.suite_params[k] for k in SIZES if k in c.suite_params}, sort_keys=True))


def proposers_of(config) -> tuple[str, ...]:
    """The run's proposers: with `proposer: llm` the LLM takes the rule-based prior's place."""
    return protocol.proposers_of(config.prior_or_feedback.proposers, config.proposer)


def proposer_for(ref: RunRef, name: str):
    """A proposer's name, or under "llm" the chat endpoint's proposer (tasks/loops/prior_or_feedback/llm.py)."""
    if name != "llm":
        return name
    from tasks.loops.prior_or_feedback.llm import LLMConfigProposer

    config = run_config(ref)
    return LLMConfigProposer(config.evolve, config.prior_or_feedback.trials)


@task(name="config_space", **STAGE_OPTIONS)
def publish_space(ref: RunRef) -> None:
    once(ref, "pof_config_space", "space", "pde1d", lambda: [
        PofConfigSpaceRow(run_id=ref.run_id, param=p, kind=k, range_json=json.dumps(list(b)))
        for p, k, b in CONFIG_SPACE])


@task(name="search", **STAGE_OPTIONS)
def run_search(ref: RunRef, condition: str, seed: int, proposer: str) -> str:
    """One 20-trial search and its final test; returns its search_id."""
    store, sid = store_for(ref.store_uri), search_id(ref, condition, seed, proposer)
    if store.has_part("pof_final_test", ref.run_id, "search", sid):
        return sid
    config, section = run_config(ref), run_config(ref).prior_or_feedback
    source, target = (x.strip() for x in condition.split("->"))
    sizes = {k: config.suite_params[k] for k in SIZES if k in config.suite_params}
    suite = Pde1d(source=source, target=target, seed=seed, **sizes)
    cases = suite.cases()
    trials = protocol.search(proposer_for(ref, proposer), task_of(condition), seed, section.trials,
                             lambda cfg: split_nrmse(suite, cases, cfg, "select"), section.tpe_startup)
    best = protocol.chosen(trials)
    test = split_nrmse(suite, cases, best["config"], "holdout")
    family = suite.target[0] if suite.source[0] == suite.target[0] else f"{suite.source[0]}>{suite.target[0]}"
    store.write_part("pof_runs", ref.run_id, "search", sid, [PofRunRow(
        run_id=ref.run_id, search_id=sid, source_cond=source, target_cond=target, pde_family=family, seed=seed,
        proposer=proposer)])
    store.write_part("pof_trials", ref.run_id, "search", sid, [PofTrialRow(
        run_id=ref.run_id, search_id=sid, t=r["t"], config_json=json.dumps(r["config"], sort_keys=True),
        val_nrmse=r["val_nrmse"], wall_s=r["wall_s"], proposal_error=r["error"]) for r in trials])
    store.write_part("pof_final_test", ref.run_id, "search", sid, [PofFinalTestRow(
        run_id=ref.run_id, search_id=sid, chosen_t=best["t"], val_nrmse=best["val_nrmse"], test_nrmse=test)])
    reporter().advance(1, f"{proposer} {condition} seed {seed}: test nRMSE {test:.4f} (t* = {best['t']})")
    return sid


def stored_trials(ref: RunRef, sid: str) -> list[dict]:
    rows = store_for(ref.store_uri).read_part("pof_trials", ref.run_id, "search", sid)
    return [{"t": r.t, "config": json.loads(r.config_json), "val_nrmse": r.val_nrmse} for r in sorted(rows, key=lambda r: r.t)]


@task(name="replay", **STAGE_OPTIONS)
def replay_search(ref: RunRef, condition: str, seed: int, proposer: str) -> None:
    """(b) at trial 1, (c) and (d) at each decision point of one recorded search."""
    sid, section = search_id(ref, condition, seed, proposer), run_config(ref).prior_or_feedback

    def rows() -> list[PofReplayRow]:
        out = protocol.replay(proposer_for(ref, proposer), task_of(condition), seed, stored_trials(ref, sid), section.decision_points,
                              section.replays_per_point, section.tpe_startup, [task_of(c) for c in section.cold_starts])
        return [PofReplayRow(run_id=ref.run_id, search_id=sid, t=r["t"], intervention=r["intervention"],
                             replay_no=r["replay_no"], proposed_config_json=json.dumps(r["config"], sort_keys=True),
                             norm_distance=r["norm_distance"], proposal_error=r["error"]) for r in out]
    once(ref, "pof_replays", "replay", sid, rows)


def stored_searches(ref: RunRef, plan: list[tuple[str, int, str]]) -> list[dict]:
    """Every search of ``plan`` as ``measures`` reads it."""
    store, out = store_for(ref.store_uri), []
    for condition, seed, proposer in plan:
        sid = search_id(ref, condition, seed, proposer)
        trials = stored_trials(ref, sid)
        first = trials[0]["config"]
        replays = [{"intervention": r.intervention, "norm_distance": r.norm_distance, "error": r.proposal_error,
                    "lr_moved": json.loads(r.proposed_config_json)["lr"] != first["lr"]}
                   for r in store.read_part("pof_replays", ref.run_id, "replay", sid)]
        test = store.read_part("pof_final_test", ref.run_id, "search", sid)[0].test_nrmse
        out.append({"condition": condition, "seed": seed, "proposer": proposer, "test": test,
                    "vals": [r["val_nrmse"] for r in trials], "replays": replays})
    return out


@task(name="gate", **STAGE_OPTIONS)
def attribute(ref: RunRef, plan: list[tuple[str, int, str]]) -> list[GateDecisionRow]:
    """One decision per proposer: does it use feedback? (its evidence, matched runs)."""
    section = run_config(ref).prior_or_feedback

    def rows() -> list[GateDecisionRow]:
        searches, out = stored_searches(ref, plan), []
        for proposer in proposers_of(run_config(ref)):
            e = evidence(searches, proposer, section.resamples)
            cid, vs = derived_id("prior_or_feedback", proposer), e.get("vs_random") or {}
            outcome = GateOutcome(
                decision="accept" if e["uses_feedback"] else "reject", reason=reason(e), improved_cases=[],
                regressed_cases=[], select_score=None, baseline_score=None, delta=json_safe(e["sensitivity"]),
                ci_low=json_safe(e["sensitivity_ci"][0]), ci_high=json_safe(e["sensitivity_ci"][1]),
                n_cases=e["searches"], evidence_json=dump_evidence(json_safe(
                    {**e, "matched_random_runs": vs.get("runs", 0)})))
            out.append(decision_row(ref, 0, cid, f"pof:{proposer}", derived_id("prior_or_feedback", "random"),
                                    outcome, id_parts=(cid, "pof"), scorer_version="pde1d"))
        return out
    return once(ref, "gate_decisions", "gate", "verdicts", rows)


def protocol_summary(ref: RunRef) -> dict[str, object]:
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "verdicts")
    return {"run_id": ref.run_id, **{row.gate: row.reason for row in rows}}
