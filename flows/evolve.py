"""evolve: archive-based program search (the inner loop of AIDE², the shape of
FunSearch / OpenEvolve).

    P <- {seed program}; champion <- gate(seed)
    for round r = 1 .. R:
        children  <- sample K from P by island tournament (mutation / crossover),
                     reading the failure memory
        execute children on train + select cases (sandboxed)
        score every execution with the suite's trusted scorer
        distill the recurring (operator, error kind) pairs into the failure memory
        in one transaction:
            gate each child against the champion on the select cases (paired)
            register accepted children as champion; score them on holdout
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import EvolveRun
from tasks.gate.stage import gate
from tasks.runtime.budget import admit_round
from tasks.runtime.lifecycle import champion_summary, flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.stages.distill import distill
from tasks.stages.execute import execute
from tasks.stages.register import register
from tasks.stages.sample import sample
from tasks.stages.score import score


def round_plan(budget: int, children_per_round: int) -> list[int]:
    """Children per round: round 0 evaluates the seed, then K per round until the
    budget of child evaluations is spent."""
    full, rest = divmod(budget, children_per_round)
    return [1] + [children_per_round] * full + ([rest] if rest else [])


def progress_total(config: EvolveRun) -> int:
    """Candidate evaluations a run makes (the seed included), for progress bars."""
    return config.budget + 1


@flow(name="evolve", flow_run_name=flow_run_name)
def evolve(config: EvolveRun, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref) as end:
        for round_index, n_children in enumerate(round_plan(config.budget, config.evolve.children_per_round)):
            if end.stopped(admit_round(ref, round_index, config)):
                break  # a budget cap: the run ends `budget_exhausted`, its champion registered
            candidate_ids = sample(ref, round_index, n_children)
            execute(ref, round_index, candidate_ids)
            score(ref, round_index, candidate_ids)
            distill(ref, round_index)
            with transaction():
                gate(ref, round_index, candidate_ids)
                register(ref, round_index)
    return champion_summary(ref)
