"""trace's picture: per grader, each (agent, perturbation)'s Δreward with its paired 95%
CI (circle) beside the rescore Δ of the same stored trajectories (square), against the
±margin equivalence band and the agent's rerun flip rate (the noise floor), coloured by
verdict.

`trace_build` reads (SQL); `trace_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

DECISIONS = ("SELECT gate, delta, ci_low, ci_high, evidence_json FROM gate_decisions "
             "WHERE run_id = $run AND gate LIKE 'trace:%' ORDER BY gate")
COLOURS = {"no effect": "#2ca02c", "grader artifact": "#ff7f0e", "behaviour effect": "#d62728",
           "inconclusive": "#777777"}


@dataclass(frozen=True)
class TraceSeries:
    verdicts: list[dict[str, Any]]
    """One per (grader, agent, condition), evidence merged in."""

    @property
    def graders(self) -> list[str]:
        return sorted({v["grader"] for v in self.verdicts})


def trace_build(con, run_id: str) -> tuple[TraceSeries, str | None]:
    rows = [{**r, **json.loads(r["evidence_json"])} for r in fetch(con, DECISIONS, run=run_id)]
    return TraceSeries(rows), None if rows else "no verdict recorded"


def trace_figure(series: TraceSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(7.5 * len(series.graders), 6.0)
    for i, grader in enumerate(series.graders):
        draw_grader(figure.add_subplot(1, len(series.graders), i + 1), series, grader)
    return figure


def draw_grader(ax: Axes, series: TraceSeries, grader: str) -> None:
    rows = sorted((v for v in series.verdicts if v["grader"] == grader), key=lambda v: (v["agent"], v["condition"]))
    for y, v in enumerate(rows):
        colour = COLOURS[v["verdict"]]
        ax.barh(y, 2 * v["flip_rate"], left=-v["flip_rate"], height=0.7, color="#dddddd", zorder=0)
        ax.errorbar(v["delta"], y - 0.15, xerr=[[v["delta"] - v["ci_low"]], [v["ci_high"] - v["delta"]]],
                    fmt="o", color=colour, capsize=3)
        low, high = v["rescore_ci"]
        ax.errorbar(v["rescore_delta"], y + 0.15, xerr=[[v["rescore_delta"] - low], [high - v["rescore_delta"]]],
                    fmt="s", color=colour, mfc="white", capsize=3)
        ax.annotate(v["verdict"], (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=7, color=colour)
    margin = rows[0]["margin"] if rows else 0.1
    for x in (-margin, margin):
        ax.axvline(x, color="#999999", linestyle="--", linewidth=0.8)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(range(len(rows)), [f"{v['agent']} / {v['condition']}" for v in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("Δreward, modified − original (circle: native v1; square: rescored)")
    ax.set_title(f"{grader}: Δ with paired 95% CI; grey: ± rerun flip rate", fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def trace_caption(series: TraceSeries) -> str:
    counts = {}
    for v in series.verdicts:
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    tally = ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))
    return (f"Each row pairs one agent's original and modified runs of the same tasks and seeds. Circles: Δreward "
            f"under the native graders (v1); squares: the same stored trajectories rescored (no re-run). Dashed: "
            f"the ±margin equivalence band; grey: the agent's identical-rerun flip rate, the noise floor an effect "
            f"must leave. Verdicts: {tally}.")
