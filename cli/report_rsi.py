"""rsi_anything's picture: each executed child's predicted vs actual public gain per WM
version (the calibration the reliability check reads), and each compatibility check's
assembled-pair vs old-pair pick gain by round, with which parts passed and whether the
pair was accepted.

`rsi_build` reads (SQL); `rsi_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

PAIRS = ("SELECT c.round, c.phase, c.wm_ver, c.pred_gain, e.gain FROM rsi_candidates c JOIN rsi_executions e "
         "ON c.run_id = e.run_id AND c.cand_id = e.cand_id AND c.parent_id = e.parent_id AND c.round = e.round "
         "AND c.phase = e.phase WHERE c.run_id = $run AND c.selected ORDER BY c.round")
CHECKS = ("SELECT round, policy_part, wm_part, metric_new, metric_old, accepted FROM pair_checks "
          "WHERE run_id = $run ORDER BY round")
BEST = ("SELECT select_score, holdout_score FROM registry WHERE run_id = $run AND name LIKE '%/rsi_anything-best'")


@dataclass(frozen=True)
class RSISeries:
    pairs: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    best: dict[str, Any] | None


def rsi_build(con, run_id: str) -> tuple[RSISeries, str | None]:
    pairs = fetch(con, PAIRS, run=run_id)
    series = RSISeries(pairs, fetch(con, CHECKS, run=run_id), next(iter(fetch(con, BEST, run=run_id)), None))
    return series, None if pairs else "no child has been executed"


def rsi_figure(series: RSISeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5)
    grid = figure.add_gridspec(1, 2)
    draw_calibration(figure.add_subplot(grid[0, 0]), series)
    draw_checks(figure.add_subplot(grid[0, 1]), series)
    return figure


def draw_calibration(ax: Axes, series: RSISeries) -> None:
    ax.set_title("WM: predicted vs actual public gain per version", fontsize=10)
    versions = list(dict.fromkeys(p["wm_ver"] for p in series.pairs))
    for i, ver in enumerate(versions):
        rows = [p for p in series.pairs if p["wm_ver"] == ver]
        ax.scatter([p["pred_gain"] for p in rows], [p["gain"] for p in rows], alpha=0.7, label=f"v{i} {ver[:8]}")
    values = [v for p in series.pairs for v in (p["pred_gain"], p["gain"])]
    ax.plot([min(values), max(values)], [min(values), max(values)], color="#444444", lw=1)
    ax.set_xlabel("predicted gain")
    ax.set_ylabel("actual gain (clipped)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def draw_checks(ax: Axes, series: RSISeries) -> None:
    ax.set_title("pair gate: assembled vs old pair's pick gain", fontsize=10)
    for c in series.checks:
        color = "#2ca02c" if c["accepted"] else "#d62728"
        ax.plot([c["round"], c["round"]], [c["metric_old"], c["metric_new"]], color=color)
        ax.scatter([c["round"]], [c["metric_old"]], color="#7f7f7f", marker="o")
        ax.scatter([c["round"]], [c["metric_new"]], color=color, marker="^")
        parts = "+".join(p for p, ok in (("policy", c["policy_part"]), ("WM", c["wm_part"])) if ok) or "none"
        ax.annotate(parts, (c["round"], c["metric_new"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(0, color="#444444", lw=1)
    ax.set_xlabel("round (grey: old pair; triangle: assembled; green: accepted)")
    ax.set_ylabel("mean gain of the pair's picks")
    ax.grid(alpha=0.3)


def rsi_caption(series: RSISeries) -> str:
    accepted = sum(c["accepted"] for c in series.checks)
    best = series.best
    tail = "" if best is None else (f" Registered program: public {best['select_score']:.4f}, hidden "
                                    f"{best['holdout_score']:.4f} neg_excess_pct.")
    return (f"{len(series.pairs)} executed children; {len(series.checks)} pair checks, {accepted} accepted (the "
            f"assembled pair beat the old pair on the same validation draws, or gate=parts).{tail}")
