"""codemidas: CodeMidas — turn existing functionality into reliably graded coding
environments, built from installed Python source (the `codemidas` suite's blocks).

    start:    the registered environment set (start_from=champion), else the empty one
    for round r = 1 .. budget:
        sample:    the next `per_round` functions of the installed-source pool not built
                   yet; hollow each (the spec: signature + docstring) and derive its tests
                   by running the original on type-driven fuzz inputs (proposer llm: and
                   on the endpoint's inputs) in the sandbox
        gate 1:    in a fresh sandbox, on the select tests, the original must pass, the
                   stub and the trivial mutants must fail
        execute:   the weak solvers' attempts (stub, mutants) and the leak hunt (a
                   retrieval solver that imports the installed original)
        score:     the reviewer checks every passing attempt on the held-out tests
                   (false positive or confirmed)
        gate 2:    drop an environment every attempt solved or every attempt failed
        register:  the set with the round's accepted environments (its sha256 the id)
    gate:     the final set is admitted when it adds an environment
    register: the champion `codemidas/codemidas`, with its held-out score (the share of
              its environments whose gate-1 verdict holds on tests no gate read)
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import CodeMidasRun
from tasks.loops.codemidas.register import register_set
from tasks.loops.codemidas.stages import construct_round, extend_set, gate_round, sample, starting_set
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run
from tasks.runtime.progress import reporter


def progress_total(config: CodeMidasRun) -> int:
    """Construction rounds."""
    return config.budget


@flow(name="codemidas", flow_run_name=flow_run_name)
def codemidas(config: CodeMidasRun, store_uri: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        start = envset = starting_set(ref)
        for r in range(1, config.budget + 1):
            candidates = sample(ref, envset)
            if not candidates:
                break  # the pool is built out
            built = construct_round(ref, r, candidates)
            gate_round(ref, r, built)
            envset = extend_set(ref, r, envset, built)
            reporter().advance(1, f"round {r}: {len(envset['environments'])} environments")
        found = register_set(ref, start, envset)
    return {"run_id": run_id, **found}
