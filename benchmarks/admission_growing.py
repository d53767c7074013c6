"""Admission control in the Growing Harness loop (`growing_harness` on toolsim): the
held-out validation gate after every fixed task, after every 8, and no gate at all.

Arms, each run on the same seeds (the seed sets the suite's worlds and noise schedules,
the train-stream order and the proposer's tie-breaks, so every arm of one seed starts
from the same scaffold on the same cases):
  gate_every_1  validate after each fixed task (paper: BrowseComp-Plus)
  gate_every_8  validate after every 8 fixed tasks (paper: WebArena-Verified)
  no_gate       accept every kept patch, never validate (the ablation)
All arms validate nothing else and see the same window size, joint-repair size and
retry limit. Measured, read back from each run's store: the registered (final) harness's
success and tool calls per task on the test split, the number of rollbacks (DuckDB SQL
over gate_decisions), and the harness's size (rules + skills).

    .venv/bin/python benchmarks/admission_growing.py            # 3 seeds, 20 instances/template
    .venv/bin/python benchmarks/admission_growing.py --quick    # 2 seeds, tiny (smoke)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = {"gate_every_1": 1, "gate_every_8": 8, "no_gate": 0}

ROLLBACK_SQL = """
SELECT count(*) FILTER (WHERE decision = 'rollback') AS rollbacks,
       count(*) FILTER (WHERE gate = 'growing_harness_validation') AS validations
FROM gate_decisions WHERE run_id = $run_id
"""


@dataclass(frozen=True)
class Run:
    arm: str
    seed: int
    test_success: float
    seed_test_success: float
    tool_calls: float
    rollbacks: int
    validations: int
    size: int
    steps: int


def run_arm(store_uri: str, arm: str, seed: int, budget: int, instances: int, window: int,
            version: int = 1) -> Run:
    from flows.growing_harness import growing_harness
    from schemas.admission import GrowConfig
    from schemas.configs import RunConfig

    run_id = f"{arm}-s{seed}".replace("_", "-")
    config = RunConfig(loop="growing_harness", suite="toolsim", budget=budget, seed=seed, workers=2, tracking=False,
                       suite_params={"instances_per_template": instances, "seed": seed, "version": version},
                       grow=GrowConfig(gate_every=ARMS[arm], window_size=window))
    growing_harness(config=config, store_uri=store_uri, run_id=run_id)
    return read_run(store_uri, run_id, arm, seed)


def test_split(store, run_id: str, candidate_id: str, metric: str) -> float:
    return fmean(s.value for s in store.read_rows("scores", run_id)
                 if s.candidate_id == candidate_id and s.split == "test" and s.metric == metric)


def read_run(store_uri: str, run_id: str, arm: str, seed: int) -> Run:
    from storage.catalog import sql
    from storage.store import open_store
    from tasks.harness_loops.episodes import harness_document
    from tasks.runtime.context import RunRef

    store = open_store(store_uri)
    (final,) = store.read_rows("registry", run_id)
    scaffold = next(c for c in store.read_rows("candidates", run_id) if c.round == 0)
    document = harness_document(RunRef(store_uri=store_uri, run_id=run_id), final.candidate_id)
    counts = sql(store, ROLLBACK_SQL.replace("$run_id", f"'{run_id}'")).to_pylist()[0]
    steps = max(d.round for d in store.read_rows("distillates", run_id) if d.kind == "loop_state")
    return Run(arm, seed, test_split(store, run_id, final.candidate_id, "success"),
               test_split(store, run_id, scaffold.candidate_id, "success"),
               test_split(store, run_id, final.candidate_id, "tool_calls"), counts["rollbacks"], counts["validations"],
               len(document.get("rules", [])) + len(document.get("skills", [])), steps)


def per_run_table(runs: list[Run]) -> str:
    lines = ["| arm | seed | steps | validations | rollbacks | harness size | test success (scaffold) | "
             "tool calls / task |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.arm} | {r.seed} | {r.steps} | {r.validations} | {r.rollbacks} | {r.size} | "
              f"{r.test_success:.3f} ({r.seed_test_success:.3f}) | {r.tool_calls:.2f} |" for r in runs]
    return "\n".join(lines)


def findings(runs: list[Run], seeds: list[int]) -> str:
    def values(arm: str, field: str) -> list[float]:
        return [float(getattr(next(r for r in runs if r.arm == arm and r.seed == s), field)) for s in seeds]

    metrics = (("final test success", "test_success"), ("rollbacks", "rollbacks"),
               ("harness size (rules + skills)", "size"), ("test tool calls / task", "tool_calls"))
    rows = [paired_row(f"{b} vs {a}", metric, a, values(a, field), b, values(b, field))
            for a, b in (("no_gate", "gate_every_1"), ("no_gate", "gate_every_8"), ("gate_every_8", "gate_every_1"))
            for metric, field in metrics]
    return table(rows)


def report(runs: list[Run], seeds: list[int]) -> str:
    return "\n\n".join(["Per run:\n\n" + per_run_table(runs), "Paired by seed:\n\n" + findings(runs, seeds)])


def measure(store_uri: str, seeds: list[int], budget: int, instances: int, window: int,
            version: int = 1) -> list[Run]:
    """Every arm on every seed, in one store."""
    return [run_arm(store_uri, arm, seed, budget, instances, window, version) for seed in seeds for arm in ARMS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 steps, 5 instances per template (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=40, help="repair steps per run (a run stops earlier when "
                                                               "the train stream and the window are exhausted)")
    parser.add_argument("--instances", type=int, default=20, help="toolsim instances per template")
    parser.add_argument("--window", type=int, default=8, help="rolling failure window size")
    parser.add_argument("--suite-version", type=int, default=1, choices=(1, 2, 3),
                        help="toolsim version (2: side effects, faults.py; 3: also per-tool pagination and truncation, observations.py)")
    args = parser.parse_args()
    seeds = list(range(2)) if args.quick else list(range(args.seeds))
    budget, instances, window = (2, 5, 4) if args.quick else (args.budget, args.instances, args.window)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = tempfile.mkdtemp(prefix="ratchet-admission-growing-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    print(report(measure(store_uri, seeds, budget, instances, window, args.suite_version), seeds))


if __name__ == "__main__":
    main()
