"""better_turns' picture: every layer's base and SFT score (each model a dot), SFT − base
per layer with its 95% CI over conversations and the seed noise floor as a band, and per
(model, conversation) the mean per-turn similarity against workflow completion: the
runs top left look like the reference turn by turn and still do not complete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

RUNS = """
SELECT d.ckpt, d.model, d.conv_id, avg(d.sim) AS sim, any_value(c.completed) AS completed
FROM decisions d JOIN closed_loop c USING (run_id, candidate_id, conv_id)
WHERE d.run_id = $run GROUP BY ALL ORDER BY d.ckpt, d.model, d.conv_id
"""
COLOURS = {"base": "#7f7f7f", "sft": "#1f77b4"}


@dataclass(frozen=True)
class TurnsSeries:
    decisions: dict[str, dict[str, Any]]
    runs: list[dict[str, Any]]

    @property
    def layers(self) -> list[str]:
        return [g.removeprefix("sft-base:") for g in self.decisions if g.startswith("sft-base:")]


def turns_build(con, run_id: str, decisions: dict[str, dict[str, Any]]):
    built = TurnsSeries({g: d for g, d in sorted(decisions.items())}, fetch(con, RUNS, run=run_id))
    return built, None if built.layers else "no layer compared yet"


def turns_figure(series: TurnsSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(15, 5.8)
    grid = figure.add_gridspec(1, 3, width_ratios=(1, 1, 1))
    draw_layers(figure.add_subplot(grid[0, 0]), series)
    draw_deltas(figure.add_subplot(grid[0, 1]), series)
    draw_disagreement(figure.add_subplot(grid[0, 2]), series)
    return figure


def draw_layers(ax: Axes, series: TurnsSeries) -> None:
    ax.set_title("each layer apart: base and SFT (dots: models)", fontsize=10)
    for y, layer in enumerate(series.layers):
        evidence = series.decisions[f"sft-base:{layer}"]["evidence"]
        for offset, ckpt in ((-0.15, "base"), (0.15, "sft")):
            ax.scatter(list(evidence["per_model"][ckpt].values()), [y + offset] * len(evidence["per_model"][ckpt]),
                       s=14, color=COLOURS[ckpt], alpha=0.6)
            ax.plot([evidence[ckpt]], [y + offset], "D", color=COLOURS[ckpt], label=ckpt if y == 0 else None)
    ax.set_yticks(range(len(series.layers)), series.layers, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("score (mean over conversations)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)


def draw_deltas(ax: Axes, series: TurnsSeries) -> None:
    ax.set_title("SFT − base, 95% CI over conversations; band: noise floor", fontsize=10)
    for y, layer in enumerate(series.layers):
        row = series.decisions[f"sft-base:{layer}"]
        floor = row["evidence"]["noise_floor"]
        if floor is not None:
            ax.fill_betweenx([y - 0.3, y + 0.3], -floor, floor, color="#ffdd99", alpha=0.6)
        colour = "#d62728" if row["decision"] == "accept" else "#555555"
        ax.errorbar(row["delta"], y, xerr=[[row["delta"] - row["ci_low"]], [row["ci_high"] - row["delta"]]],
                    fmt="o", color=colour, capsize=4)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(range(len(series.layers)), series.layers, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("difference (red: CI excludes 0)")
    ax.grid(axis="x", alpha=0.3)


def draw_disagreement(ax: Axes, series: TurnsSeries) -> None:
    rng = np.random.default_rng(0)
    for ckpt in ("base", "sft"):
        runs = [r for r in series.runs if r["ckpt"] == ckpt]
        ax.scatter([r["sim"] for r in runs], [float(r["completed"]) + rng.uniform(-0.08, 0.08) for r in runs],
                   s=12, alpha=0.5, color=COLOURS[ckpt], label=ckpt)
    sft = series.decisions.get("turns-vs-workflow:sft", {}).get("evidence", {})
    ax.set_title(f"similarity vs completion (SFT Spearman {sft.get('rank_agreement') or float('nan'):+.2f})",
                 fontsize=10)
    ax.set_yticks([0, 1], ["not completed", "completed"])
    ax.set_xlabel("mean per-turn similarity (L1) of a run's conversation")
    ax.legend(fontsize=8, loc="center left")
    ax.grid(alpha=0.3)


def turns_caption(series: TurnsSeries) -> str:
    parts = []
    for ckpt in ("base", "sft"):
        e = series.decisions.get(f"turns-vs-workflow:{ckpt}", {}).get("evidence", {})
        if e:
            parts.append(f"{ckpt}: exact turns {e['turn_success']:.2f} vs completed {e['completion']:.2f}, "
                         f"{len(e['high_sim_incomplete'])} of {e['high_sim_runs']} high-similarity runs incomplete")
    return ("Left: every layer scored apart (L1 similarity, L2 judge, L3 exact call, text and tool turns apart, on "
            "the gold history; L4 completion and L5 holistic success in closed loop). Middle: SFT − base paired over "
            "conversations; an effect inside the band (largest gap between two seeds of one checkpoint) is inside "
            "the noise floor. Right: each (model, conversation), jittered. " + "; ".join(parts) + ".")
