"""cover: CoVer — self-generated tests that learn to discriminate programs, not to go
easy, on codemidas (the first `problems` kept tasks).

    execute:  every problem's original and its mutants run in the sandbox on the frozen
              GT tests and on every input generator's pool (`proposer: llm`: one more
              generator, the endpoint's inputs for the problem's spec)
    for step t = 1 .. budget:
        sample:   per problem, `programs` mutation operators from the code policy (a
                  program = a mutant of that operator, or the original) and `tests`
                  input generators from the test policy (a test = an input of the
                  generator's pool, its expected outcome the programs' plurality)
        score:    code reward = GT pass fraction; test reward = I(pass; GT) gated by
                  cov(pass, GT) > 0 (or the pass rate, `reward=pass_rate`)
        distill:  the filter drops invalid tests, duplicate inputs and tests that behave
                  like a kept one (their reward is 0)
        update:   one REINFORCE step with group normalisation for each role
    gate:     trained vs uniform policies on the same problems and candidate sets: the
              mutant-kill AUC gain's paired CI above 0, and at most half of the suites
              collapsed to trivial tests
    register: the policies and their suites (content id), with held-out rerank accuracy
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import CoverRun
from tasks.loops.cover.problems import OPERATORS
from tasks.loops.cover.stages import execute_problems, train
from tasks.loops.cover.verdict import gate, register
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: CoverRun) -> int:
    """Problems executed, then training steps."""
    return config.cover.problems + config.budget


@flow(name="cover", flow_run_name=flow_run_name)
def cover(config: CoverRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        problems = execute_problems(ref)
        code, test = [0.0] * len(OPERATORS), [0.0] * len(problems[0].generators)
        for step in range(1, config.budget + 1):
            code, test = train(ref, step, problems, code, test)
        found = gate(ref, problems, code, test, config.budget)
        registered = register(ref, problems, code, test, found)
    return {"run_id": run_id, "auc": round(found["auc"], 4), "base_auc": round(found["base_auc"], 4),
            "delta": [round(found["delta"], 4), *(round(x, 4) for x in found["ci"])],
            "trivial_share": round(found["trivial_share"], 4), **registered}
