"""Admission control in the Self-Healing Harness loop (`self_healing` on toolsim):
what the paired-replay gate rejects, what the library guard does to the accumulated
rule set, and gated admission vs accepting every proposed rule.

Arms, each run on the same seeds (the seed sets the suite's worlds and noise schedules
and the proposer's order, so arm A and arm B of one seed see the same cases):
  gated+guard   the loop as specified (replay gate, library guard every 2 admissions)
  gated         the replay gate, no library guard
  accept_all    every proposal admitted (the replay still runs and is recorded), no guard

Measured, all read back from each run's store:
  (a) share of replay-rejected proposals that fixed their trigger but broke a protected
      case: DuckDB SQL over gate_decisions.evidence_json (REJECTED_SQL below), pooled
      over the two gated arms' runs;
  (b) the champion after every round (registry history; after the round's guard), its
      success on every select and test case, and its active-set size (rules + skills);
  (c) final champions' test success, paired by seed.
Select/test success is the suite's trusted scorer (`ToolSim.score`) re-simulating each
case under the harness the champion's sandboxed program returned.

    .venv/bin/python benchmarks/admission_self_healing.py            # 3 seeds, 10 rounds
    .venv/bin/python benchmarks/admission_self_healing.py --quick    # 2 seeds, 2 rounds
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

ARMS = {
    "gated+guard": {"guard": True, "guard_interval": 2, "accept_all": False},
    "gated": {"guard": False, "accept_all": False},
    "accept_all": {"guard": False, "accept_all": True},
}

REJECTED_SQL = """
WITH rejected AS (
    SELECT CAST(json_extract(evidence_json, '$.fixed_trigger') AS BOOLEAN) AS fixed,
           CAST(json_extract(evidence_json, '$.broke_protected') AS BOOLEAN) AS broke
    FROM gate_decisions
    WHERE run_id = $run_id AND gate = 'paired_replay' AND decision = 'reject'
      AND json_extract_string(evidence_json, '$.path') = 'replay'
)
SELECT count(*) AS rejected,
       count(*) FILTER (WHERE fixed AND broke) AS fixed_but_broke,
       count(*) FILTER (WHERE NOT fixed) AS not_fixed,
       count(*) FILTER (WHERE broke) AS broke
FROM rejected
"""
"""Replay-path rejections (the follow-up path has no protected case): all, those whose
evidence says the rule fixed a trigger case and broke a protected one (the paper's
55%), those that fixed no trigger, and those that broke a protected case."""


@dataclass(frozen=True)
class Run:
    arm: str
    seed: int
    select: tuple[float, ...]
    """Champion select success after round 0..budget."""
    test: tuple[float, ...]
    active: tuple[int, ...]
    rejected: int
    fixed_but_broke: int
    not_fixed: int
    broke: int
    retired: int


def run_arm(store_uri: str, arm: str, seed: int, budget: int, instances: int, version: int = 1,
            fault_rate: float = 0.15) -> Run:
    from flows.self_healing import self_healing
    from schemas.admission import HealConfig
    from schemas.configs import RunConfig

    run_id = f"{arm}-s{seed}".replace("+", "-")
    config = RunConfig(loop="self_healing", suite="toolsim", budget=budget, seed=seed, workers=2, tracking=False,
                       suite_params={"instances_per_template": instances, "seed": seed, "version": version,
                                     "fault_rate": fault_rate}, heal=HealConfig(**ARMS[arm]))
    summary = self_healing(config=config, store_uri=store_uri, run_id=run_id)
    return read_run(store_uri, run_id, arm, seed, budget, summary["guard_retired"])


def champions_by_round(store_uri: str, run_id: str, budget: int) -> list[str]:
    """The champion at the end of each round 0..budget (after that round's guard)."""
    from storage.store import open_store

    store = open_store(store_uri)
    rounds = {d.decision_id: d.round for d in store.read_rows("gate_decisions", run_id)}
    registry = sorted(store.read_rows("registry", run_id), key=lambda r: r.version)
    return [[r for r in registry if rounds[r.decision_id] <= t][-1].candidate_id for t in range(budget + 1)]


def read_run(store_uri: str, run_id: str, arm: str, seed: int, budget: int, retired: int) -> Run:
    from storage.catalog import sql
    from storage.store import open_store
    from tasks.harness_loops.episodes import harness_document
    from tasks.loops.self_healing.heal_logic import ablations
    from tasks.runtime.context import RunRef, cases_by_split, run_suite

    ref = RunRef(store_uri=store_uri, run_id=run_id)
    suite = run_suite(ref)
    splits = {split: cases_by_split(suite, split) for split in ("select", "test")}
    memo: dict[str, tuple[float, float, int]] = {}
    for candidate_id in champions_by_round(store_uri, run_id, budget):
        if candidate_id not in memo:
            document = harness_document(ref, candidate_id)
            select, test = (fmean(suite.score(c, {"harness": document}).metrics["success"] for c in splits[s])
                            for s in ("select", "test"))
            memo[candidate_id] = (select, test, len(ablations(document)))
    timeline = [memo[c] for c in champions_by_round(store_uri, run_id, budget)]
    counts = sql(open_store(store_uri), REJECTED_SQL.replace("$run_id", f"'{run_id}'")).to_pylist()[0]
    return Run(arm, seed, tuple(t[0] for t in timeline), tuple(t[1] for t in timeline), tuple(t[2] for t in timeline),
               counts["rejected"], counts["fixed_but_broke"], counts["not_fixed"], counts["broke"], retired)


def rounds_table(runs: list[Run], budget: int) -> str:
    """(b): per round, mean over seeds of the champion's select/test success and set size."""
    lines = ["| round | " + " | ".join(f"{arm} select / test / size" for arm in ARMS) + " |",
             "| --- |" + " --- |" * len(ARMS)]
    for t in range(budget + 1):
        cells = []
        for arm in ARMS:
            mine = [r for r in runs if r.arm == arm]
            cells.append(f"{fmean(r.select[t] for r in mine):.3f} / {fmean(r.test[t] for r in mine):.3f} / "
                         f"{fmean(r.active[t] for r in mine):.1f}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def findings(runs: list[Run], seeds: list[int]) -> str:
    def final(arm: str, field: str) -> list[float]:
        return [getattr(next(r for r in runs if r.arm == arm and r.seed == s), field)[-1] for s in seeds]

    rows = [paired_row("(b) library guard on the accumulated set", metric, "gated", final("gated", field),
                       "gated+guard", final("gated+guard", field))
            for metric, field in (("final select success", "select"), ("final test success", "test"),
                                  ("final active members", "active"))]
    rows += [paired_row("(c) gate vs accept everything", metric, "accept_all", final("accept_all", field),
                        "gated", final("gated", field))
             for metric, field in (("final test success", "test"), ("final active members", "active"))]
    rows.append(paired_row("(c) gate+guard vs accept everything", "final test success", "accept_all",
                           final("accept_all", "test"), "gated+guard", final("gated+guard", "test")))
    return table(rows)


def report(runs: list[Run], seeds: list[int], budget: int) -> str:
    gated = [r for r in runs if r.arm != "accept_all"]
    rejected, broke = sum(r.rejected for r in gated), sum(r.fixed_but_broke for r in gated)
    share = f"{broke / rejected:.2f}" if rejected else "n/a"
    seed_baseline = fmean(r.test[0] for r in runs if r.arm == "gated")
    return "\n\n".join([
        f"(a) replay-rejected proposals, gated arms ({len(gated)} runs): {rejected}; fixed the trigger but broke a "
        f"protected case: {broke} (share {share}); fixed no trigger: {sum(r.not_fixed for r in gated)}; broke a "
        f"protected case: {sum(r.broke for r in gated)}. Paper: 211 of 383 (0.55) fixed the trigger but broke one.",
        f"Guard retirements (gated+guard arm, all seeds): {sum(r.retired for r in runs if r.arm == 'gated+guard')}. "
        f"Seed harness (no rules) test success: {seed_baseline:.3f}.",
        "(b) champion after each round, mean over seeds:\n\n" + rounds_table(runs, budget),
        "Paired by seed (final champion):\n\n" + findings(runs, seeds),
    ])


def measure(store_uri: str, seeds: list[int], budget: int, instances: int, version: int = 1,
            fault_rate: float = 0.15) -> list[Run]:
    """Every arm on every seed, in one store."""
    return [run_arm(store_uri, arm, seed, budget, instances, version, fault_rate) for seed in seeds for arm in ARMS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 rounds, 5 instances per template (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=10, help="rounds (proposals) per run")
    parser.add_argument("--instances", type=int, default=10, help="toolsim instances per template")
    parser.add_argument("--suite-version", type=int, default=1, choices=(1, 2, 3),
                        help="toolsim version (2: side effects, faults.py; 3: also per-tool pagination and truncation, observations.py)")
    parser.add_argument("--fault-rate", type=float, default=0.15, help="toolsim fault rate per call")
    args = parser.parse_args()
    seeds, budget, instances = (list(range(2)), 2, 5) if args.quick else (list(range(args.seeds)), args.budget,
                                                                            args.instances)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = tempfile.mkdtemp(prefix="ratchet-admission-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    print(report(measure(store_uri, seeds, budget, instances, args.suite_version, args.fault_rate), seeds,
                 budget))


if __name__ == "__main__":
    main()
