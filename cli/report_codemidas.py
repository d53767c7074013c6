"""codemidas' picture: per construction round, how far each built candidate got (probe,
derive, gate 1, leak, gate 2, kept: the yield per stage), and per environment that
reached gate 1 its mutation score on the select tests (what the gates read) against the
held-out tests (what no gate read), kept ones in green.

`codemidas_build` reads (SQL); `codemidas_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch, last_registered

CANDIDATES = ("SELECT round, content FROM distillates WHERE run_id = $run AND kind = 'codemidas_candidate' "
              "ORDER BY round")
CHECKS = "SELECT content FROM distillates WHERE run_id = $run AND kind = 'codemidas_check'"
STAGES = ("probe", "derive", "gate1", "leak", "gate2", "kept")
COLORS = ("#bbbbbb", "#999999", "#d62728", "#9467bd", "#ff7f0e", "#2ca02c")


@dataclass(frozen=True)
class CodeMidasSeries:
    candidates: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    champion: dict[str, Any] | None


def codemidas_build(con, run_id: str) -> tuple[CodeMidasSeries, str | None]:
    candidates = [{**json.loads(r["content"]), "round": r["round"]} for r in fetch(con, CANDIDATES, run=run_id)]
    checks = [json.loads(r["content"]) for r in fetch(con, CHECKS, run=run_id)]
    champion = last_registered(con, run_id)
    return CodeMidasSeries(candidates, checks, champion), None if candidates else "no candidate has been built"


def codemidas_figure(series: CodeMidasSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13, 5.0)
    grid = figure.add_gridspec(1, 2, width_ratios=(1, 1.2))
    draw_yield(figure.add_subplot(grid[0, 0]), series)
    draw_scores(figure.add_subplot(grid[0, 1]), series)
    return figure


def draw_yield(ax: Axes, series: CodeMidasSeries) -> None:
    ax.set_title("candidates per round by the stage they reached", fontsize=10)
    rounds = sorted({c["round"] for c in series.candidates})
    bottom = [0] * len(rounds)
    for stage, color in zip(STAGES, COLORS):
        counts = [sum(c["round"] == r and c["stage_reached"] == stage for c in series.candidates) for r in rounds]
        ax.bar(rounds, counts, bottom=bottom, color=color, label=stage)
        bottom = [b + n for b, n in zip(bottom, counts)]
    ax.set_xlabel("round")
    ax.set_ylabel("candidate functions")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")


def draw_scores(ax: Axes, series: CodeMidasSeries) -> None:
    ax.set_title("mutation score: select tests (gated) vs held-out tests", fontsize=10)
    kept = {c["cand_id"] for c in series.candidates if c["stage_reached"] == "kept"}
    by_split = {(c["cand_id"], c["split"]): c["mutation_score"] for c in series.checks}
    ids = sorted({cid for cid, _ in by_split})
    for cid in ids:
        color = "#2ca02c" if cid in kept else "#d62728"
        ax.plot([0, 1], [by_split.get((cid, "select")), by_split.get((cid, "holdout"))], marker="o", color=color,
                alpha=0.7)
    ax.set_xticks([0, 1], ["select", "held-out"])
    ax.set_ylabel("share of mutants killed (green: kept)")
    ax.grid(alpha=0.3)


def codemidas_caption(series: CodeMidasSeries) -> str:
    counts = {s: sum(c["stage_reached"] == s for c in series.candidates) for s in STAGES}
    yields = ", ".join(f"{s} {n}" for s, n in counts.items() if n)
    champion = series.champion
    tail = "" if champion is None else (
        f" Registered set {champion['candidate_id'][:10]}: select mutation score {champion['select_score']:.3f}, "
        f"held-out (gate 1 replicates on unseen tests) {champion['holdout_score']:.3f}.")
    return f"{len(series.candidates)} candidate functions built: {yields}.{tail}"
