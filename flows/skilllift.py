"""skilllift: cheap skill edits first, then calibrate the scoring rubric with real
execution (SkillLift), on toolsim.

The skill is a toolsim rule set (the agent's procedural harness); the rubric is a
weighted list of static checks on it. Bilevel and alternating: the inner loop freezes
the rubric and revises skills against it without running anything; the outer loop runs a
few of them for real, keeps the champion by real results only, and recalibrates the
rubric towards the real ranking. Departures from the paper: the modules named in
``tasks/loops/skilllift/``.

    skill_0 <- the suite's seed harness; run it for real (train + select)
    rubric_0 <- one check per failed event of skill_0's runs + generic checks
    catalogue <- the rule proposer's rules from those failures + wildcard retries
    champion <- skill_0 (admitted, holdout measured)
    for round r = 1 .. budget:
        inner:  rubric_{r-1} frozen; hill-climb from the champion: each step proposes
                `proposals` revisions (catalogue mutations, or `proposer: llm`) and
                moves to the best by rubric score; zero simulator calls
        outer:  run the top-k skills not yet executed, and the champion, for real on
                the select cases; Kendall tau (with a bootstrap CI) between the real
                and the rubric ranking
        in one transaction:
            gate:     challenger = best executed by real success; accept iff it beats
                      the champion (paired on the select cases); the old champion is kept
            register: accepted -> champion version, holdout measured
        distill: rubric_r <- rubric_{r-1} + checks for the executed skills' new failed
                 events, weights refit by pairwise logistic ranking over every skill
                 executed so far (`skilllift.calibrate`: regression or off, ablations)
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import SkillLiftRun
from tasks.loops.skilllift.gate import choose, recalibrate, register, skilllift_summary
from tasks.loops.skilllift.stages import inner, outer, plant
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def progress_total(config: SkillLiftRun) -> int:
    """Real-run stages a run makes (the initial skill's included), for progress bars."""
    return config.budget + 1


@flow(name="skilllift", flow_run_name=flow_run_name)
def skilllift(config: SkillLiftRun, store_uri: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        seed = plant(ref)
        with transaction():
            choose(ref, 0, [seed])
            register(ref, 0)
        for round_index in range(1, config.budget + 1):
            candidates = inner(ref, round_index)
            if candidates:
                outer(ref, round_index, candidates)
                with transaction():
                    choose(ref, round_index, candidates)
                    register(ref, round_index)
            recalibrate(ref, round_index, candidates)
    return skilllift_summary(ref)
