"""medrsi: clinically aligned self-evolution with slow registration (MedRSI), on toolsim.

The artifact is the stable toolbox: a toolsim harness whose rules and skills are the
registered "tools". The tool builder is the rule proposer (no LLM; every `proposer`
value but `llm`) or, with `proposer: llm`, a chat endpoint given the top cluster. It
builds one tool per round from the highest-priority failure cluster; a tool reaches
the stable harness only after a fast discovery gate and a slow registration trial on
later request batches. Departures from the paper: ``tasks/loops/medrsi/medrsi_logic.py``.

    stable <- the suite's seed harness (stable v1)
    for round r = 1 .. budget:
        trial:     request batch r arrives; every pooled tool admitted before r runs
                   with and without (its frozen stable harness) on it, paired
        in one transaction:
            weigh:    per pooled tool, over its first N later batches:
                      register iff mean balanced-success gain > threshold AND mean
                      cost with <= without; fewer than N batches: keep trialling;
                      stable set changed since admission: re-test first
            register: accept -> tool stable, its harness the new stable (holdout
                      measured); reject -> retired; re-test -> re-frozen against the
                      current stable set, trial restarts
        diagnose:  run the stable harness on the discovery cases; failures ranked by
                   count x severity cost, clustered by (template, failure signature)
        build:     the rule proposer turns the top cluster it can act on into one tool
                   (a rule or a skill) -- pool full or nothing to build: skip
        discover:  run stable + tool on the discovery cases
        in one transaction:
            admit: balanced-success gain on discovery -> experimental pool, frozen
                   (code, stable version, simulation version); else discarded
                   (no-delay ablation: registered at once)
            enrol: the pool's and the registry's rows for that decision
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import MedRSIRun
from tasks.loops.medrsi.medrsi_gate import admit, admit_seed, enrol, medrsi_summary, register_tools, trial, weigh
from tasks.loops.medrsi.medrsi_stages import build, diagnose, discover, plant
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def progress_total(config: MedRSIRun) -> int:
    """Rounds a run makes (the seed's admission included), for progress bars."""
    return config.budget + 1


@flow(name="medrsi", flow_run_name=flow_run_name)
def medrsi(config: MedRSIRun, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        admit_seed(ref, plant(ref))
        for round_index in range(1, config.budget + 1):
            trial(ref, round_index)
            with transaction():
                weigh(ref, round_index)
                register_tools(ref, round_index)
            stable = diagnose(ref, round_index)
            tool = build(ref, round_index, stable)
            if tool is not None:
                discover(ref, round_index, tool)
                with transaction():
                    admit(ref, round_index, tool)
                    enrol(ref, round_index)
    return medrsi_summary(ref)
