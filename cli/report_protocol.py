"""The pictures of the measurement protocols (family ``protocol``), one per loop:

- harness_or_model: the paired b − a of each count with its task-bootstrap 95% CI, each
  arm's solve rate per template (the pre-registered groups marked), and cost per solved
  task with the range missing usage leaves open;
- better_turns: every layer per checkpoint, SFT − base with its CI and noise floor, and
  per-turn similarity against completion (`cli.report_turns`);
- datasense: each selector's predicted-best-group gain over random subsets with its CI,
  holdout accuracy by predicted rank, and Spearman per pool.

`protocol_build` reads (SQL); the rest draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

COUNTS = ("success", "ended_self", "hit_limit")
DECISIONS = """
SELECT gate, decision, delta, ci_low, ci_high, n_cases, evidence_json FROM gate_decisions
WHERE run_id = $run ORDER BY gate
"""
PER_TEMPLATE = """
SELECT split_part(c.summary, ':', 1) AS arm, split_part(s.case_id, '/', 1) AS template,
       avg(s.value) AS solved, count(*) AS runs
FROM scores s JOIN candidates c ON c.run_id = s.run_id AND c.candidate_id = s.candidate_id
WHERE s.run_id = $run AND s.metric = 'success'
GROUP BY ALL ORDER BY template, arm
"""


@dataclass(frozen=True)
class ProtocolSeries:
    decisions: dict[str, dict[str, Any]]
    per_template: list[dict[str, Any]]

    @property
    def arms(self) -> list[str]:
        return sorted({r["arm"] for r in self.per_template})


@dataclass(frozen=True)
class SelectionSeries:
    """datasense: decisions by gate (``datasense:<selector>`` over all pools and
    ``datasense:<selector>:poolNN`` per pool), evidence parsed."""

    decisions: dict[str, dict[str, Any]]

    @property
    def selectors(self) -> list[str]:
        return sorted(g.split(":")[1] for g in self.decisions if g.count(":") == 1)

    def pools(self, selector: str) -> list[dict[str, Any]]:
        return [d["evidence"] for g, d in sorted(self.decisions.items()) if g.startswith(f"datasense:{selector}:pool")]


def protocol_build(con, loop: str, run_id: str):
    """(series, None) or (series, why there is nothing to plot) for the run's protocol."""
    decisions = {r["gate"]: {**r, "evidence": json.loads(r["evidence_json"])} for r in fetch(con, DECISIONS, run=run_id)}
    if loop == "better_turns":
        from cli.report_turns import turns_build

        return turns_build(con, run_id, decisions)
    if loop == "datasense":
        built = SelectionSeries(decisions)
        return built, None if built.selectors else "no selector has been verified over its pools"
    built = ProtocolSeries(decisions, fetch(con, PER_TEMPLATE, run=run_id))
    return built, None if "paired:success" in built.decisions else "no paired comparison recorded"


def protocol_figure(series) -> Figure:
    from cli.report_draw import new_figure
    from cli.report_selection import selection_figure

    from cli.report_turns import TurnsSeries, turns_figure

    if isinstance(series, SelectionSeries):
        return selection_figure(series)
    if isinstance(series, TurnsSeries):
        return turns_figure(series)

    figure = new_figure(15, 6.2)
    grid = figure.add_gridspec(1, 3, width_ratios=(1, 1.3, 0.9))
    draw_differences(figure.add_subplot(grid[0, 0]), series)
    draw_templates(figure.add_subplot(grid[0, 1]), series)
    draw_costs(figure.add_subplot(grid[0, 2]), series)
    return figure


def _names(series: ProtocolSeries) -> tuple[str, str]:
    evidence = series.decisions["paired:success"]["evidence"]
    return evidence["baseline"], evidence["candidate"]


def draw_differences(ax: Axes, series: ProtocolSeries) -> None:
    a, b = _names(series)
    ax.set_title(f"{b} − {a} per task, 95% task-bootstrap CI", fontsize=10)
    for y, metric in enumerate(COUNTS):
        row = series.decisions[f"paired:{metric}"]
        colour = "#d62728" if row["decision"] == "accept" else "#555555"
        ax.errorbar(row["delta"], y, xerr=[[row["delta"] - row["ci_low"]], [row["ci_high"] - row["delta"]]],
                    fmt="o", color=colour, capsize=4)
        ax.annotate(f"{row['delta']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]", (row["delta"], y),
                    textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(range(len(COUNTS)), ["solved", "ended by itself", "hit step limit"])
    ax.set_ylim(-0.6, len(COUNTS) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("difference of the per-task rate (red: CI excludes 0)")
    ax.grid(axis="x", alpha=0.3)


def draw_templates(ax: Axes, series: ProtocolSeries) -> None:
    groups = series.decisions["subgroup:success"]["evidence"]["groups"]
    order = [t for g in sorted(groups) for t in groups[g]]
    solved = {(r["arm"], r["template"]): r["solved"] for r in series.per_template}
    width = 0.8 / max(1, len(series.arms))
    for i, arm in enumerate(series.arms):
        ax.barh([y + (i - (len(series.arms) - 1) / 2) * width for y in range(len(order))],
                [solved.get((arm, t), 0.0) for t in order], height=width, label=arm)
    ax.set_yticks(range(len(order)), [f"{t} ({next(g for g in groups if t in groups[g])})" for t in order],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("solved share of the template's runs")
    sub = series.decisions["subgroup:success"]
    ax.set_title(f"solved per template (pre-registered groups; interaction p = {sub['evidence']['p']:.3f})",
                 fontsize=10)
    ax.legend(fontsize=8, ncol=len(series.arms), loc="upper center", bbox_to_anchor=(0.5, -0.1))


def draw_costs(ax: Axes, series: ProtocolSeries) -> None:
    evidence = series.decisions["cost_per_solved"]["evidence"]
    per = evidence["per_solved"]
    arms = sorted(per)
    for x, arm in enumerate(arms):
        low, mid, high = (per[arm][k] for k in ("low", "mid", "high"))
        if mid is None:
            continue
        ax.errorbar(x, mid, yerr=[[mid - low], [high - mid]], fmt="s", color="#1f77b4", capsize=6)
        missing = evidence["missing"][arm]
        ax.annotate(f"{mid:.3g}\n{missing} run{'' if missing == 1 else 's'} without usage", (x, low),
                    textcoords="offset points", xytext=(0, -22), ha="center", fontsize=7)
    ax.set_xticks(range(len(arms)), arms)
    ax.set_xlim(-0.6, len(arms) - 0.4)
    ax.margins(y=0.15)
    ax.set_ylabel("cost per solved task (frozen prices, price units)")
    ratio, (lo, hi) = evidence["ratio"], evidence["ratio_ci"]
    ax.set_title(f"cost per solved: ratio {ratio:.2f} [{lo:.2f}, {hi:.2f}]", fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def protocol_caption(series) -> str:
    if isinstance(series, SelectionSeries):
        from cli.report_selection import selection_caption

        return selection_caption(series)
    from cli.report_turns import TurnsSeries, turns_caption

    if isinstance(series, TurnsSeries):
        return turns_caption(series)
    a, b = _names(series)
    limit = series.decisions["paired:hit_limit"]["evidence"]
    hits = ", ".join(f"{arm} {int(n)}" for arm, n in sorted(limit["hit_limit"].items()))
    solved = ", ".join(f"{arm} {int(n)}" for arm, n in sorted(limit["hit_limit_and_solved"].items()))
    return (
        f"Left: per task (seeds averaged inside a task), {b} − {a} of each count, kept apart: solved, ended by "
        f"itself, stopped by the step limit; a CI with 0 in it shows no difference, not equivalence. Runs that hit "
        f"the limit: {hits}; of those, solved all the same: {solved}. Middle: each arm's "
        f"solved share per template, grouped as pre-registered for the label-permutation test. Right: cost per "
        f"solved task at frozen prices with input re-derived as uncached; the bar spans missing usage filled with 0 "
        f"(bottom) to the arm's largest run cost (top), the square fills it with the arm's mean."
    )
