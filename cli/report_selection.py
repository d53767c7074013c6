"""datasense's picture: each selector's predicted-best-group gain over random subsets
(pooled over pools, 95% CI), holdout accuracy by predicted rank (the ideal falls left to
right), and Spearman of predicted vs actual ranking per pool."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def selection_figure(series) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(15, 5.8)
    grid = figure.add_gridspec(1, 3, width_ratios=(1, 1.2, 1))
    draw_gains(figure.add_subplot(grid[0, 0]), series)
    draw_by_rank(figure.add_subplot(grid[0, 1]), series)
    draw_spearman(figure.add_subplot(grid[0, 2]), series)
    return figure


def draw_gains(ax: Axes, series) -> None:
    ax.set_title("predicted-best group − random subsets (holdout accuracy)", fontsize=10)
    for y, name in enumerate(series.selectors):
        row = series.decisions[f"datasense:{name}"]
        low, high = row["ci_low"], row["ci_high"]
        colour = "#d62728" if row["decision"] == "accept" else "#555555"
        ax.errorbar(row["delta"], y, xerr=[[row["delta"] - low], [high - row["delta"]]], fmt="o", color=colour,
                    capsize=4)
        hits = row["evidence"]
        ax.annotate(f"{row['delta']:+.3f}  top-1 {hits['top1_hits']}/{hits['pools']}", (row["delta"], y),
                    textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(range(len(series.selectors)), series.selectors)
    ax.set_ylim(-0.6, len(series.selectors) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("gain, 95% CI over holdout cases of every pool (red: excludes 0)")
    ax.grid(axis="x", alpha=0.3)


def draw_by_rank(ax: Axes, series) -> None:
    ax.set_title("holdout accuracy of each group by its predicted rank (pool mean)", fontsize=10)
    reference = []
    for name in series.selectors:
        pools = series.pools(name)
        by_rank = np.mean([[p["actual_accuracy"][p["predicted_rank"].index(r)] for r in range(1, len(p["predicted_rank"]) + 1)]
                           for p in pools], axis=0)
        ax.plot(range(1, len(by_rank) + 1), by_rank, marker="o", label=name)
        reference.extend(p["reference_accuracy"] for p in pools)
    if reference:
        ax.axhline(float(np.mean(reference)), color="#999999", linestyle="--", label="random subsets (mean)")
    ax.set_xticks(range(1, 1 + max((len(p["predicted_rank"]) for n in series.selectors for p in series.pools(n)),
                                   default=1)))
    ax.set_xlabel("predicted rank (1 = predicted best)")
    ax.set_ylabel("holdout accuracy")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def draw_spearman(ax: Axes, series) -> None:
    ax.set_title("Spearman of predicted vs actual ranking, per pool", fontsize=10)
    for y, name in enumerate(series.selectors):
        rhos = [p["spearman"] for p in series.pools(name) if p["spearman"] is not None]
        ax.scatter(rhos, [y] * len(rhos), color="#1f77b4", s=24)
        if rhos:
            ax.plot([np.mean(rhos)] * 2, [y - 0.3, y + 0.3], color="#d62728")
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_xlim(-1.05, 1.05)
    ax.set_yticks(range(len(series.selectors)), series.selectors)
    ax.invert_yaxis()
    ax.set_xlabel("Spearman (dots: pools, red bar: mean)")
    ax.grid(axis="x", alpha=0.3)


def selection_caption(series) -> str:
    pools = max((len(series.pools(n)) for n in series.selectors), default=0)
    return (f"{pools} pools with planted defects (wrong labels, duplicates, off-task answers). Left: for each selector, "
            "the holdout accuracy of a student trained on the group it predicted best, minus the mean of students "
            "trained on equal-size random subsets, paired per holdout case over every pool; top-1: how often the "
            "predicted-best group was the true best. Middle: accuracy by predicted rank (a good selector falls from "
            "left to right), dashed: the random subsets. Right: rank agreement per pool; 'random' has no real "
            "ranking, so its Spearman is noise around 0.")
