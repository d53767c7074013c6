"""research_world_models' picture: per setting (same-env, cross-env), each predictor's
mean Regret@k per environment (lines join one environment across predictors: the
comparison is paired), and the gate's Regret@k minus the prior's with its CI.

`rwm_build` reads (SQL); `rwm_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch, last_registered

METRICS = "SELECT content FROM distillates WHERE run_id = $run AND kind = 'rwm_metric'"
GATES = ("SELECT candidate_id, decision, delta, ci_low, ci_high, evidence_json FROM gate_decisions "
         "WHERE run_id = $run AND gate = 'rwm_predictor'")
PREDICTORS = ("prior", "knn", "ridge")
SETTINGS = ("same", "cross")


@dataclass(frozen=True)
class RWMSeries:
    metrics: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    recipe: dict[str, Any] | None


def rwm_build(con, run_id: str) -> tuple[RWMSeries, str | None]:
    metrics = [json.loads(r["content"]) for r in fetch(con, METRICS, run=run_id)]
    gates = [{**r, "setting": json.loads(r["evidence_json"])["setting"]} for r in fetch(con, GATES, run=run_id)]
    recipe = last_registered(con, run_id)
    return RWMSeries(metrics, gates, recipe), None if metrics else "no selection round has been judged"


def rwm_figure(series: RWMSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(14, 5.2)
    grid = figure.add_gridspec(1, 3, width_ratios=(1, 1, 0.9))
    for i, setting in enumerate(SETTINGS):
        draw_regret(figure.add_subplot(grid[0, i]), series, setting)
    draw_gates(figure.add_subplot(grid[0, 2]), series)
    return figure


def draw_regret(ax: Axes, series: RWMSeries, setting: str) -> None:
    ax.set_title(f"{setting}-env experience: mean Regret@k per env", fontsize=10)
    rows = [m for m in series.metrics if m["setting"] == setting]
    for env in sorted({m["env"] for m in rows}):
        values = [next((m["regret_at_k"] for m in rows if m["env"] == env and m["predictor"] == p), None)
                  for p in PREDICTORS]
        ax.plot(range(len(PREDICTORS)), values, marker="o", alpha=0.8, label=env)
    ax.set_xticks(range(len(PREDICTORS)), PREDICTORS)
    ax.set_ylabel("Regret@k (best gain left unchosen, log10 speed-up)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def draw_gates(ax: Axes, series: RWMSeries) -> None:
    ax.set_title("gate: Δ Regret@k vs the prior (95% CI)", fontsize=10)
    labels = []
    for i, g in enumerate(sorted(series.gates, key=lambda g: (SETTINGS.index(g["setting"]), g["candidate_id"]))):
        color = "#2ca02c" if g["decision"] == "accept" else "#d62728"
        ax.errorbar([g["delta"]], [i], xerr=[[g["delta"] - g["ci_low"]], [g["ci_high"] - g["delta"]]], fmt="o",
                    color=color, capsize=4)
        labels.append(f"{g['setting']}: {g['candidate_id'].split(':')[1]}")
    ax.axvline(0, color="#444444", lw=1)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("Δ Regret@k (< 0 helps; green: accepted)")
    ax.grid(alpha=0.3)


def rwm_caption(series: RWMSeries) -> str:
    gates = "; ".join(f"{g['setting']} {g['candidate_id'].split(':')[1]} {g['delta']:+.3f} "
                      f"[{g['ci_low']:+.3f}, {g['ci_high']:+.3f}] {g['decision']}" for g in series.gates)
    recipe = series.recipe
    tail = "" if recipe is None else (f" Registered recipe {recipe['candidate_id'][:10]}: mean gain "
                                      f"{recipe['select_score']:+.3f} over the environments, held-out "
                                      f"{recipe['holdout_score']:.3f}.")
    return ("Each predictor chose from the same proposals (paired); the context never held a proposal's "
            f"near-duplicate group (cross: nor its environment). Gate, Regret@k vs the prior: {gates}.{tail}")
