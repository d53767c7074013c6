"""SkillLift findings on toolsim: real success against real executions, the calibrated
rubric (skilllift: pairwise ranking refit) against its ablations and against a baseline
that evaluates every mutation for real, paired on the same suite seeds (worlds, noise)
and proposer seeds:
    frozen:      the rubric is never recalibrated (`skilllift.calibrate=off`);
    regression:  the refit regresses the absolute real scores (ridge) instead of ranking;
    real_every:  no rubric: the inner hill climb scores every mutation by real runs on the
                 select cases (same steps and proposals per round);
    real_matched: real_every stopped once it has spent skilllift's real episodes (per seed).
Outcomes: the final champion's held-out success (its holdout cases are run only for that),
real episodes spent on select cases (one episode = one skill on one case; the inner loop
spends none), and Kendall tau of rubric vs real per round (rubric arms). The composition
is the flow's (plant, inner, outer, choose, recalibrate) on the same pure functions; the
skills are rule documents our proposer wrote, simulated by the suite's trusted episode in
this process (the flow runs them through the sandbox). Departures: the paper's 40-70%
token saving is a relative-score-threshold statistic over benchmarks; here episodes are
counted directly.

    .venv/bin/python benchmarks/skilllift_findings.py            # 10 seeds, 6 rounds
    .venv/bin/python benchmarks/skilllift_findings.py --quick    # 3 seeds, 3 rounds
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402
from schemas.ids import seed_for  # noqa: E402

ARMS = ("skilllift", "frozen", "regression", "real_every", "real_matched")
CALIBRATION = {"skilllift": "pairwise", "frozen": "off", "regression": "regression"}
SEED_DOCUMENT = {"version": 1, "rules": [], "skills": []}


@dataclass(frozen=True)
class Knobs:
    rounds: int = 6
    inner_iterations: int = 12
    proposals: int = 4
    top_k: int = 3
    l2: float = 0.1
    instances: int = 20


@dataclass
class World:
    """One seed's suite and its trusted in-process real runs (cached per skill)."""

    seed: int
    instances: int
    episodes: int = 0
    runs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        from suites.toolsim.suite import ToolSim

        self.suite = ToolSim(seed=self.seed, instances_per_template=self.instances)
        self.split = {s: [c for c in self.suite.cases() if c.split == s] for s in ("train", "select", "holdout")}

    def real(self, skill: str, document: dict, split: str = "select", count: bool = True) -> dict:
        """case -> (success, trace) of a skill's runs on the split (counted once)."""
        from tasks.proposers.rule_evidence import trace_of

        key = (skill, split)
        if key not in self.runs:
            out = {}
            for case in self.split[split]:
                episode = self.suite.episode(case, {"harness": document})
                out[case.case_id] = (float(episode.evaluation.success), trace_of(case.case_id, case.payload, episode))
            self.runs[key] = out
            self.episodes += len(out) if (count and split == "select") else 0
        return self.runs[key]

    def mean(self, skill: str, document: dict, split: str = "select") -> float:
        return fmean(s for s, _ in self.real(skill, document, split).values())


def lift(world: World, knobs: Knobs, calibrate: str) -> dict:
    """The flow's rounds in process: inner rubric search, outer real runs, the real gate, recalibration."""
    from tasks.loops.skilllift.calibrate import agreement, executed_features, refit
    from tasks.loops.skilllift.decide import decide
    from tasks.loops.skilllift.inner import catalogue, hill_climb, rubric_scorer, rule_reviser, skill_id, top_k
    from tasks.loops.skilllift.rubric import extend_rubric, rubric_score, seed_rubric

    champion, documents = skill_id(SEED_DOCUMENT), {skill_id(SEED_DOCUMENT): SEED_DOCUMENT}
    train = [t for _, t in world.real(champion, SEED_DOCUMENT, "train").values()]
    rubric, rules = seed_rubric(train), catalogue(train, SEED_DOCUMENT)
    world.real(champion, SEED_DOCUMENT)
    taus, checks = [], 0
    for r in range(1, knobs.rounds + 1):
        rng = random.Random(seed_for(world.seed, "skilllift", "inner", r))
        visited = hill_climb(documents[champion], rubric_scorer(rubric), rule_reviser(rules), knobs.inner_iterations,
                             knobs.proposals, rng)
        checks += len(visited) * len(rubric)
        chosen = top_k([v for v in visited if v.skill_id != champion], knobs.top_k, set(documents))
        if not chosen:
            continue
        documents.update({v.skill_id: v.document for v in chosen})
        executed = [champion, *(v.skill_id for v in chosen)]
        real = {c: {k: s for k, (s, _) in world.real(c, documents[c]).items()} for c in executed}
        scores = {c: rubric_score(rubric, documents[c]) for c in executed}
        corr = agreement([fmean(real[c].values()) for c in executed], [scores[c] for c in executed], seed=r)
        taus.append(corr.kendall)
        best, outcome = decide(real, scores, champion, corr, 0.0, seed=r)
        champion = best if outcome.decision == "accept" else champion
        traces = [t for v in chosen for _, t in world.real(v.skill_id, v.document).values()]
        rubric = extend_rubric(rubric, traces)
        means = {c: world.mean(c, documents[c]) for c in documents}
        features, ys = executed_features(rubric, documents, means)
        rubric = refit(rubric, features, ys, calibrate, knobs.l2)
    return {"holdout": world.mean(champion, documents[champion], "holdout"), "episodes": world.episodes,
            "select": world.mean(champion, documents[champion]), "checks": checks,
            "tau": fmean([t for t in taus if not math.isnan(t)] or [math.nan])}


def climb_for_real(world: World, knobs: Knobs, cap: int | None) -> dict:
    """The baseline: the same hill climb, every mutation scored by real select runs
    (stops spending once ``cap`` episodes are used: later proposals score -inf)."""
    from tasks.loops.skilllift.inner import catalogue, hill_climb, rule_reviser, skill_id

    seed = skill_id(SEED_DOCUMENT)
    train = [t for _, t in world.real(seed, SEED_DOCUMENT, "train").values()]
    rules = catalogue(train, SEED_DOCUMENT)

    def real_score(document: dict) -> float:
        sid = skill_id(document)
        if cap is not None and (sid, "select") not in world.runs and world.episodes + len(world.split["select"]) > cap:
            return -math.inf
        return world.mean(sid, document)

    champion = SEED_DOCUMENT
    for r in range(1, knobs.rounds + 1):
        rng = random.Random(seed_for(world.seed, "skilllift", "inner", r))
        visited = hill_climb(champion, real_score, rule_reviser(rules), knobs.inner_iterations, knobs.proposals, rng)
        champion = max(visited, key=lambda v: (v.rubric_score, -v.step)).document  # rubric_score holds the real score
    sid = skill_id(champion)
    return {"holdout": world.mean(sid, champion, "holdout"), "episodes": world.episodes,
            "select": world.mean(sid, champion), "checks": 0, "tau": math.nan}


def measure(seeds: int, knobs: Knobs) -> dict[str, list[dict]]:
    """Per arm, one result per seed, in seed order."""
    out: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for seed in range(seeds):
        for arm, method in CALIBRATION.items():
            out[arm].append(lift(World(seed, knobs.instances), knobs, method))
        out["real_every"].append(climb_for_real(World(seed, knobs.instances), knobs, None))
        out["real_matched"].append(climb_for_real(World(seed, knobs.instances), knobs, out["skilllift"][-1]["episodes"]))
    return out


def rows_of(found: dict) -> list:
    rows = []
    for arm in ARMS[1:]:
        for metric in ("holdout", "episodes"):
            rows.append(paired_row(f"skilllift vs {arm}", metric, arm, [r[metric] for r in found[arm]], "skilllift",
                                   [r[metric] for r in found["skilllift"]]))
    return rows


def arm_table(found: dict) -> str:
    lines = ["| arm | held-out success | select success | real episodes | rubric checks | mean Kendall τ |",
             "| --- | --- | --- | --- | --- | --- |"]
    for arm in ARMS:
        rs = found[arm]
        tau = [r["tau"] for r in rs if not math.isnan(r["tau"])]
        lines.append(f"| {arm} | {fmean(r['holdout'] for r in rs):.3f} | {fmean(r['select'] for r in rs):.3f} | "
                     f"{fmean(r['episodes'] for r in rs):.0f} | {fmean(r['checks'] for r in rs):.0f} | "
                     f"{fmean(tau) if tau else float('nan'):+.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    seeds, knobs = (3, Knobs(rounds=3)) if args.quick else (args.seeds, Knobs(rounds=args.rounds))
    start = time.time()
    found = measure(seeds, knobs)
    text = (f"toolsim, {knobs.instances} instances per template, {seeds} seeds, {knobs.rounds} rounds, inner "
            f"{knobs.inner_iterations} steps x {knobs.proposals} proposals, top-{knobs.top_k} "
            f"({time.time() - start:.0f} s)\n\n{arm_table(found)}\n\n{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
