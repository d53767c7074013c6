"""Pure functions from a run's rows (`cli.report_data`) to the series `ratchet report`
draws, so a test can check the picture's data against SQL without reading pixels.

Families: program search (evolve; aide2's node tree), harness loops (a gate admits or
rejects edits of a rule/skill harness) and training loops (optimizer steps on a policy,
evaluated on the select split per chunk)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from cli.report_data import Rows

CRASHED = ("error", "memory", "killed")
"""Execution statuses of a candidate that died before it produced an output."""

FAILURES = ("timeout", "crashed", "invalid")
"""Outcomes drawn apart from real scores: a timeout or a crash has no score, and an
invalid output's recorded 0 is the scorer's verdict "invalid", not a measured 0."""


@dataclass(frozen=True)
class Point:
    round: int
    candidate_id: str
    score: Optional[float]
    decision: Optional[str]
    outcome: str
    """"scored" (every select case ran and was valid) or one of FAILURES."""


@dataclass(frozen=True)
class Champion:
    version: int
    select: Optional[float]
    holdout: Optional[float]
    round: Optional[int] = None
    """The round of the gate decision that admitted it (None when not in this run)."""
    candidate_id: Optional[str] = None


@dataclass(frozen=True)
class SearchSeries:
    points: list[Point]
    staircase: list[tuple[int, float]]
    """(round, best select score of an accepted candidate up to that round)."""
    champions: list[Champion]

    def outcome_counts(self) -> dict[str, int]:
        return {o: sum(p.outcome == o for p in self.points) for o in ("scored", *FAILURES)}


@dataclass(frozen=True)
class HarnessSeries:
    decisions: list[dict[str, Any]]
    """round, gate, decision, score (the candidate's, on the gate's cases), baseline."""
    counts: dict[int, dict[str, int]]
    """round -> decision -> number of gate decisions."""
    champions: list[Champion]


@dataclass(frozen=True)
class TrainingSeries:
    loss: list[tuple[int, float]]
    """(optimizer step, loss)."""
    extra_losses: dict[str, list[tuple[int, float]]]
    """Other `*_loss` metrics of the steps (actor and critic loss of ppo_pact)."""
    batch_accuracy: list[tuple[int, float]]
    """(steps done, the training batch's accuracy or mean reward at that step)."""
    batch_label: str
    select: list[tuple[int, float]]
    """(optimizer steps the evaluated policy has taken, its select accuracy)."""
    warm_start: Optional[float]
    final: Optional[Champion] = None
    final_step: Optional[int] = None


@dataclass(frozen=True)
class NodeSeries:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    champions: list[Champion] = field(default_factory=list)


def outcome_of(executions: Rows) -> str:
    """A candidate's select outcome from its select executions (status + score validity)."""
    statuses = {e["status"] for e in executions}
    if "timeout" in statuses:
        return "timeout"
    if statuses & set(CRASHED):
        return "crashed"
    if "invalid" in statuses or any(e["valid"] is False for e in executions):
        return "invalid"
    return "scored"


def champions_of(rows: Rows) -> list[Champion]:
    """The run's main champion line: the registered name with the most champion versions."""
    if not rows:
        return []
    names = [r["name"] for r in rows]
    main = max(dict.fromkeys(names), key=names.count)
    return [Champion(r["version"], r["select_score"], r["holdout_score"], r.get("round"), r.get("candidate_id"))
            for r in rows if r["name"] == main]


def search_series(rows: dict[str, Rows]) -> SearchSeries:
    by_candidate: dict[str, Rows] = {}
    for e in rows["executions"]:
        by_candidate.setdefault(e["candidate_id"], []).append(e)
    decisions = {d["candidate_id"]: d["decision"] for d in rows["decisions"]}
    points = []
    for c in rows["candidates"]:
        executions = by_candidate.get(c["candidate_id"])
        if not executions:
            continue  # sampled but not executed yet (a crashed or running round)
        outcome = outcome_of(executions)
        values = [e["value"] for e in executions if e["value"] is not None]
        score = sum(values) / len(values) if outcome == "scored" and values else None
        points.append(Point(c["round"], c["candidate_id"], score, decisions.get(c["candidate_id"]), outcome))
    return SearchSeries(points, staircase(points), champions_of(rows["champions"]))


def staircase(points: list[Point]) -> list[tuple[int, float]]:
    """Best accepted score so far, per round from the first accepted round on."""
    best, steps = None, []
    for r in sorted({p.round for p in points}):
        accepted = [p.score for p in points if p.round == r and p.decision == "accept" and p.score is not None]
        if accepted:
            best = max(accepted) if best is None else max(best, *accepted)
        if best is not None:
            steps.append((r, best))
    return steps


def harness_series(rows: dict[str, Rows]) -> HarnessSeries:
    decisions = [{"round": d["round"], "gate": d["gate"], "decision": d["decision"], "score": d["select_score"],
                  "baseline": d["baseline_score"]} for d in rows["decisions"]]
    counts: dict[int, dict[str, int]] = {}
    for d in decisions:
        per_round = counts.setdefault(d["round"], {})
        per_round[d["decision"]] = per_round.get(d["decision"], 0) + 1
    return HarnessSeries(decisions, dict(sorted(counts.items())), champions_of(rows["champions"]))


def steps_done(steps: Rows) -> dict[str, int]:
    """Optimizer steps a checkpoint has taken: one past the last step keyed by it."""
    done: dict[str, int] = {}
    for s in steps:
        done[s["candidate_id"]] = max(done.get(s["candidate_id"], 0), s["step"] + 1)
    return done


def training_series(rows: dict[str, Rows]) -> TrainingSeries:
    steps, done = rows["steps"], steps_done(rows["steps"])
    loss = [(s["step"], s["loss"]) for s in steps]
    names = sorted({k for s in steps for k in s["metrics"] if k.endswith("_loss")})
    extra = {n: [(s["step"], s["metrics"][n]) for s in steps if n in s["metrics"]] for n in names}
    key = "accuracy" if any("accuracy" in s["metrics"] for s in steps) else "reward_mean"
    batch = [(s["step"] + 1, s["metrics"][key]) for s in steps if key in s["metrics"]]
    evaluated = [e for e in rows["evaluations"] if e["round"] == 0 or e["candidate_id"] in done]
    select = sorted((done.get(e["candidate_id"], 0), e["accuracy"]) for e in evaluated)
    warm = [e["accuracy"] for e in evaluated if e["round"] == 0]
    champions = champions_of(rows["champions"])
    final = champions[-1] if champions else None
    final_step = done.get(final.candidate_id, max(done.values(), default=0)) if final else None
    return TrainingSeries(loss, extra, batch, "batch accuracy" if key == "accuracy" else "batch mean reward",
                          select, warm[0] if warm else None, final, final_step)


def node_series(rows: dict[str, Rows]) -> NodeSeries:
    return NodeSeries(list(rows["nodes"]), champions_of(rows["champions"]))
