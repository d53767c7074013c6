"""Drawing shared by every report (title, caption, the champions panel, saving) and the
program-search pictures (evolve's candidates and staircase, aide2's node tree). Every
function takes a series from `cli.report_series` and draws; none reads the store."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from cli.report_series import FAILURES, Champion, NodeSeries, SearchSeries  # noqa: E402

DECISION_STYLE = {  # decision -> (colour, marker, label)
    "accept": ("#d62728", "o", "accepted"),
    "trial": ("#ff7f0e", "^", "trial (admitted to test)"),
    "reject": ("#8c8c8c", "x", "rejected"),
    "rollback": ("#9467bd", "v", "rolled back"),
}
FAILURE_STYLE = {  # outcome -> (colour, marker, label)
    "timeout": ("#ff7f0e", "X", "timed out"),
    "crashed": ("#9467bd", "v", "crashed (error / memory / killed)"),
    "invalid": ("#8c564b", "s", "invalid output"),
}
DPI = 110


def jitter(rounds: list[int], width: float = 0.3) -> list[float]:
    """Spread the points of one round across `width` so that they do not hide each other."""
    seen: dict[int, int] = {}
    totals = {r: rounds.count(r) for r in rounds}
    out = []
    for r in rounds:
        i = seen[r] = seen.get(r, -1) + 1
        out.append(r + (width * (i / (totals[r] - 1) - 0.5) if totals[r] > 1 else 0.0))
    return out


def integer_x(ax: Axes, values: list[int]) -> None:
    """Integer ticks on x: every value when few, else a locator that keeps to integers."""
    distinct = sorted(set(values))
    if 0 < len(distinct) <= 15:
        ax.set_xticks(distinct)
        ax.set_xlim(distinct[0] - 0.6, distinct[-1] + 0.6)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def empty_note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555555", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])


CHAMPION_LABELS = ("select (what the gate saw)", "holdout (never gated on)")


def draw_champions(ax: Axes, champions: list[Champion], ylabel: str, title: str = "champions: select vs holdout",
                   labels: tuple[str, str] = CHAMPION_LABELS) -> None:
    """Each champion version's select score and holdout score, by version."""
    ax.set_title(title, fontsize=10)
    if not champions:
        empty_note(ax, "no champion registered yet")
        return
    for attr, style, colour, label in (("select", "o-", "#1f77b4", labels[0]), ("holdout", "s--", "#ff7f0e", labels[1])):
        shown = [(c.version, getattr(c, attr)) for c in champions if getattr(c, attr) is not None]
        if shown:  # holdout hollow and larger: it stays visible when it equals select
            ax.plot(*zip(*shown), style, c=colour, label=label, ms=6 if attr == "select" else 9,
                    mfc="none" if attr == "holdout" else None, mew=1.5)
    integer_x(ax, [c.version for c in champions])
    ax.set(xlabel="champion version", ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def new_figure(width: float, height: float) -> Figure:
    """A figure whose constrained layout keeps titles, labels and outside legends apart."""
    return plt.figure(figsize=(width, height), layout="constrained")


def finish(figure: Figure, title: str, caption: str, path: Path) -> Path:
    """Title on top, the caption wrapped in a band under the panels, saved as PNG."""
    width, height = figure.get_size_inches()
    lines = textwrap.wrap(caption, width=int(width * 15))
    bottom = (0.25 + 0.15 * len(lines)) / height
    figure.suptitle(title, fontsize=12, fontweight="bold")
    figure.text(0.012, 0.012, "\n".join(lines), ha="left", va="bottom", fontsize=8.5, color="#333333")
    figure.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
    path = path if path.suffix else path.with_suffix(".png")  # savefig would add it; say where it went
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def search_figure(series: SearchSeries, metric: str, reference: Optional[tuple[str, float]]) -> Figure:
    figure = new_figure(15, 6.8)
    grid = figure.add_gridspec(2, 2, width_ratios=(2.3, 1), height_ratios=(4, 1.3))
    scores = figure.add_subplot(grid[0, 0])
    strip = figure.add_subplot(grid[1, 0], sharex=scores)
    draw_scores(scores, series, metric, reference)
    draw_failures(strip, series)
    draw_champions(figure.add_subplot(grid[:, 1]), series.champions, f"{metric}")
    integer_x(strip, [p.round for p in series.points])
    scores.tick_params(labelbottom=False)
    return figure


def draw_scores(ax: Axes, series: SearchSeries, metric: str, reference: Optional[tuple[str, float]]) -> None:
    scored = [p for p in series.points if p.outcome == "scored"]
    xs = dict(zip([id(p) for p in scored], jitter([p.round for p in scored])))
    xs.update({id(p): p.round for p in scored if p.decision == "accept"})  # on the staircase's step
    for decision in ("reject", "trial", "rollback", "accept"):
        chosen = [p for p in scored if p.decision == decision]
        if chosen or decision in ("reject", "accept"):
            colour, marker, label = DECISION_STYLE[decision]
            ax.scatter([xs[id(p)] for p in chosen], [p.score for p in chosen], c=colour, marker=marker,
                       s=36 if decision == "accept" else 18, zorder=3, label=f"{label} ({len(chosen)})",
                       edgecolors="black" if decision == "accept" else None, linewidths=0.5)
    if series.staircase:
        last = max(p.round for p in series.points)
        rounds, best = zip(*series.staircase, (last, series.staircase[-1][1]))
        ax.step(rounds, best, where="post", c="#d62728", lw=1.5, label="champion (best accepted so far)")
    if reference:
        label, value = reference
        ax.axhline(value, ls=":", c="#2ca02c", lw=1.5, label=f"{label}: {value:.4f}")
    for outcome in FAILURES:  # legend entries only: the points are in the strip below
        n = series.outcome_counts()[outcome]
        colour, marker, label = FAILURE_STYLE[outcome]
        ax.scatter([], [], c=colour, marker=marker, s=30, label=f"{label} ({n}), strip below")
    ax.set(ylabel=f"select {metric}\n(mean over select cases)")
    ax.set_title("candidates by round and the champion staircase", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def draw_failures(ax: Axes, series: SearchSeries) -> None:
    """Candidates with no select score, one row per kind of failure."""
    counts = series.outcome_counts()
    for row, outcome in enumerate(FAILURES):
        chosen = [p for p in series.points if p.outcome == outcome]
        colour, marker, _ = FAILURE_STYLE[outcome]
        ax.scatter(jitter([p.round for p in chosen]), [row] * len(chosen), c=colour, marker=marker, s=30, zorder=3)
    ax.set_yticks(range(len(FAILURES)), [f"{FAILURE_STYLE[o][2].split(' (')[0]} ({counts[o]})" for o in FAILURES],
                  fontsize=8)
    ax.set_ylim(-0.6, len(FAILURES) - 0.4)
    ax.set(xlabel="round")
    ax.grid(alpha=0.3, axis="x")


def nodes_figure(series: NodeSeries) -> Figure:
    figure = new_figure(13, 5.6)
    tree, champions = figure.subplots(1, 2, width_ratios=(2, 1))
    nodes = series.nodes
    rounds = [n["round"] for n in nodes]
    for key, marker, label in (("composite", "o", "composite (hidden holdout, decides)"),
                               ("public_composite", "^", "public composite (select scores the agent saw)")):
        accepted = [n for n in nodes if n["accepted"]]
        rejected = [n for n in nodes if not n["accepted"]]
        colour = "#1f77b4" if key == "composite" else "#ff7f0e"
        tree.scatter([n["round"] for n in accepted], [n[key] for n in accepted], marker=marker, c=colour, s=48,
                     zorder=3, label=f"{label}, accepted ({len(accepted)})")
        tree.scatter([n["round"] for n in rejected], [n[key] for n in rejected], marker=marker, facecolors="none",
                     edgecolors=colour, s=48, zorder=3, label=f"{label}, rejected ({len(rejected)})")
    tree.step(rounds, [n["best_so_far"] for n in nodes], where="post", c="#d62728", lw=1.5, label="best so far")
    integer_x(tree, rounds)
    tree.set(xlabel="node (outer round)", ylabel="mean normalised score over inner suites")
    tree.set_title("AIDE² nodes: hidden vs public composite", fontsize=10)
    tree.grid(alpha=0.3)
    tree.legend(fontsize=8, loc="best")
    draw_champions(champions, series.champions, "composite", "agent champions: public vs hidden composite",
                   ("public composite (select)", "hidden composite (holdout, decides)"))
    return figure
