"""cover's picture: both roles' policies step by step (the code role's operator
probabilities, the test role's generator probabilities), the test role's rewards and
the filter's work per step (mean reward of the kept tests, the kept and trivial shares),
and the gate's paired evaluation: per (problem, seed) the trained policies' mutant-kill
AUC against the uniform policies' on the same candidate sets, the diagonal meaning no
gain.

`cover_build` reads (SQL); `cover_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch, last_registered

KINDS = ("SELECT kind, content FROM distillates WHERE run_id = $run "
         "AND kind IN ('cover_policy', 'cover_test', 'cover_eval')")
DECISION = "SELECT decision, reason FROM gate_decisions WHERE run_id = $run AND gate LIKE 'cover%'"


@dataclass(frozen=True)
class CoverSeries:
    policies: list[dict[str, Any]]
    tests: list[dict[str, Any]]
    evals: list[dict[str, Any]]
    decision: dict[str, Any] | None
    champion: dict[str, Any] | None

    def steps(self) -> list[int]:
        return sorted({t["step"] for t in self.tests})


def cover_build(con, run_id: str) -> tuple[CoverSeries, str | None]:
    by_kind: dict[str, list[dict]] = {"cover_policy": [], "cover_test": [], "cover_eval": []}
    for r in fetch(con, KINDS, run=run_id):
        by_kind[r["kind"]].append(json.loads(r["content"]))
    series = CoverSeries(sorted(by_kind["cover_policy"], key=lambda p: p["step"]), by_kind["cover_test"],
                         by_kind["cover_eval"], next(iter(fetch(con, DECISION, run=run_id)), None),
                         last_registered(con, run_id))
    return series, None if series.policies else "no training step recorded"


def cover_figure(series: CoverSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(15, 4.6)
    grid = figure.add_gridspec(1, 4, width_ratios=(1, 1, 1, 1))
    for k, role in enumerate(("code", "test")):
        draw_policy(figure.add_subplot(grid[0, k]), series, role)
    draw_rewards(figure.add_subplot(grid[0, 2]), series)
    draw_gate(figure.add_subplot(grid[0, 3]), series)
    return figure


def draw_policy(ax: Axes, series: CoverSeries, role: str) -> None:
    mine = [p for p in series.policies if p["role"] == role]
    what = "mutation operator" if role == "code" else "input generator"
    ax.set_title(f"{role} role: P({what}) after each step", fontsize=10)
    for k, action in enumerate(mine[0]["actions"] if mine else []):
        ax.plot([p["step"] for p in mine], [p["probs"][k] for p in mine], marker=".", label=action)
    ax.set_xlabel("REINFORCE step")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)


def draw_rewards(ax: Axes, series: CoverSeries) -> None:
    ax.set_title("test role per step", fontsize=10)
    steps = series.steps()
    per = {s: [t for t in series.tests if t["step"] == s] for s in steps}
    kept = {s: [t for t in per[s] if t["kept"]] for s in steps}
    ax.plot(steps, [fmean(t["reward"] for t in kept[s]) if kept[s] else 0.0 for s in steps], marker="o",
            label="mean reward of kept tests")
    ax.plot(steps, [len(kept[s]) / len(per[s]) for s in steps], marker="s", label="kept by the filter")
    ax.plot(steps, [sum(t["trivial"] for t in per[s]) / len(per[s]) for s in steps], marker="^",
            label="trivial (every program passes)")
    ax.set_xlabel("REINFORCE step")
    ax.set_ylabel("bits / share of the step's tests")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)


def draw_gate(ax: Axes, series: CoverSeries) -> None:
    verdict = series.decision["decision"] if series.decision else "no gate yet"
    ax.set_title(f"mutant-kill AUC per problem-seed (gate: {verdict})", fontsize=10)
    pairs = paired_auc(series.evals)
    ax.scatter([u for u, _ in pairs], [t for _, t in pairs], color="#1f77b4", alpha=0.7)
    low = min([0.5] + [min(pair) for pair in pairs]) - 0.02
    ax.plot([low, 1.02], [low, 1.02], color="#777777", linewidth=1, linestyle="--")
    ax.set_xlim(low, 1.02)
    ax.set_ylim(low, 1.02)
    ax.set_xlabel("uniform policies")
    ax.set_ylabel("trained policies")
    ax.grid(alpha=0.3)


def paired_auc(evals: list[dict]) -> list[tuple[float, float]]:
    """(uniform, trained) AUC of each (problem, seed) both checkpoints scored."""
    trained_ckpt = max((e["ckpt"] for e in evals), default=0)
    by = {(e["ckpt"], e["bench"], e["seed"]): e["auc"] for e in evals if e["auc"] is not None}
    return [(by[(0, b, s)], a) for (c, b, s), a in sorted(by.items()) if c == trained_ckpt and c != 0
            and (0, b, s) in by]


def cover_caption(series: CoverSeries) -> str:
    steps = series.steps()
    head = f"{len(steps)} REINFORCE steps on {len({t['prob_id'] for t in series.tests})} problems."
    gate = "" if series.decision is None else f" Gate {series.decision['decision']}: {series.decision['reason']}."
    champion = series.champion
    tail = "" if champion is None else (
        f" Registered {champion['candidate_id'][:10]} ({champion['stage']}): select AUC "
        f"{champion['select_score']:.3f}, held-out best-of-n rerank {champion['holdout_score']:.3f}.")
    return head + gate + tail
