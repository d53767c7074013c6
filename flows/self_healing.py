"""self_healing: runtime oversight of agent self-modification (Self-Healing Harness).

The artifact is a toolsim harness: text behaviour rules (and skills) the agent runs
with. The rule proposer writes one rule per round from trace evidence; an external
paired-replay gate, which the proposer cannot touch, decides which rules persist.

    champion <- the suite's seed harness (no rules), admitted as the first champion
    for round r = 1 .. budget:
        Detect:   run the champion on the train cases; record trajectories and scores
        Notice:   write the failures (unmet goals, broken guards) as evidence
        Heal:     the rule proposer edits the champion's harness (one rule)
                  -- no edit left that the evidence supports: stop early
        execute:  run the candidate on up to 3 failing trigger + 2 protected cases
                  (same payloads as the champion's runs: same noise, paired)
        in one transaction:
            Validate: keep the rule iff it fixes a trigger and no measured metric drops
                      (no trigger available: the next 3 cases, unpaired follow-up path)
            register: kept -> new champion (holdout measured), rule active;
                      rejected -> rule retired (the proposer moves on to another edit)
            (ablation accept_all: every rule is kept; the replay is still recorded)
        every guard_interval admissions, the library guard re-tests the active set:
            repeat: ablate each member on the protected + select cases; retire the
                    member whose removal does not hurt (most helpful removal first),
                    register the smaller set as champion; until no removal is free
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import SelfHealingRun
from tasks.loops.self_healing.heal import SKIPPED, detect, heal, notice, plant
from tasks.loops.self_healing.heal_gate import heal_summary, register_rule, replay, validate
from tasks.loops.self_healing.heal_guard import guard_is_due, library_guard
from tasks.runtime.budget import admit_round
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def progress_total(config: SelfHealingRun) -> int:
    """Rounds a run makes (the seed's admission included), for progress bars."""
    return config.budget + 1


@flow(name="self_healing", flow_run_name=flow_run_name)
def self_healing(config: SelfHealingRun, store_uri: str | None = None, run_id: str | None = None,
                 parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref) as end:
        seed = plant(ref)
        with transaction():
            validate(ref, 0, seed)
            register_rule(ref, 0)
        for round_index in range(1, config.budget + 1):
            if end.stopped(admit_round(ref, round_index, config)):
                break  # a budget cap: the run ends `budget_exhausted`, its champion registered
            champion = detect(ref, round_index)
            notice(ref, round_index, champion)
            candidate = heal(ref, round_index, champion)
            if candidate is None:
                break
            if candidate == SKIPPED:  # the llm's answer gave no rule: recorded, and the next round asks again
                continue
            replay(ref, round_index, candidate, champion)
            with transaction():
                validate(ref, round_index, candidate)
                register_rule(ref, round_index)
            if guard_is_due(ref, round_index):
                library_guard(ref, round_index)
    return heal_summary(ref)
