"""Pictures of the harness loops (gate decisions on rule/skill edits) and the training
loops (loss and select accuracy of a policy by optimizer step)."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_draw import DECISION_STYLE, draw_champions, empty_note, integer_x, jitter, new_figure
from cli.report_series import HarnessSeries, TrainingSeries

DECISIONS = ("accept", "trial", "reject", "rollback")


def harness_figure(series: HarnessSeries, metric: str) -> Figure:
    figure = new_figure(14, 8.4)
    grid = figure.add_gridspec(2, 2, height_ratios=(1.25, 1), width_ratios=(1.4, 1))
    draw_gate_scores(figure.add_subplot(grid[0, :]), series, metric)
    draw_decision_counts(figure.add_subplot(grid[1, 0]), series)
    draw_champions(figure.add_subplot(grid[1, 1]), series.champions, metric)
    return figure


GATE_MARKERS = ("o", "^", "s", "P", "D", "v")


def draw_gate_scores(ax: Axes, series: HarnessSeries, metric: str) -> None:
    """Per round, each gated edit's score (colour: decision, shape: gate) next to the
    champion's on the same cases."""
    ax.set_title(f"{metric} per round: each gated edit vs the champion on the same cases", fontsize=10)
    scored = [d for d in series.decisions if d["score"] is not None]
    if not scored:
        empty_note(ax, "no gate decision with a score yet (a seed admitted without evidence scores nothing)")
        return
    xs = jitter([d["round"] for d in scored], width=0.35)
    for x, d in zip(xs, scored):
        if d["baseline"] is not None:
            ax.plot([x, x], [d["baseline"], d["score"]], c="#bbbbbb", lw=1, zorder=1)
    paired = [(x, d["baseline"]) for x, d in zip(xs, scored) if d["baseline"] is not None]
    if paired:
        ax.scatter(*zip(*paired), marker="_", c="#555555", s=140, zorder=2, label="champion on the same cases")
    gates = sorted({d["gate"] for d in series.decisions})
    shape = dict(zip(gates, GATE_MARKERS * 2))
    for x, d in zip(xs, scored):
        ax.scatter([x], [d["score"]], c=DECISION_STYLE[d["decision"]][0], marker=shape[d["gate"]], s=55, zorder=3,
                   edgecolors="black", linewidths=0.4)
    for decision in DECISIONS:  # legend: colour = decision ...
        n = sum(d["decision"] == decision for d in scored)
        if n or decision in ("accept", "reject"):
            ax.scatter([], [], c=DECISION_STYLE[decision][0], marker="o", s=55, label=f"{DECISION_STYLE[decision][2]} ({n})")
    for gate in gates:  # ... and shape = gate
        ax.scatter([], [], c="white", edgecolors="black", marker=shape[gate], s=55, label=f"gate: {gate}")
    line = sorted((c.round, c.select) for c in series.champions if c.round is not None and c.select is not None)
    if line:
        last = max(d["round"] for d in series.decisions)
        rounds, values = zip(*line, (max(last, line[-1][0]), line[-1][1]))
        ax.step(rounds, values, where="post", c="#d62728", lw=1.2, alpha=0.5, label="champion (registered select score)")
    integer_x(ax, [d["round"] for d in series.decisions])
    if all(0 <= d["score"] <= 1 for d in scored):
        ax.set_ylim(-0.05, 1.05)
    ax.set(xlabel="round", ylabel=f"{metric} rate on the gate's cases")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def draw_decision_counts(ax: Axes, series: HarnessSeries) -> None:
    """Stacked bars: how many edits each round's gates accepted, rejected, ...."""
    rounds = list(series.counts)
    bottom = [0] * len(rounds)
    for decision in DECISIONS:
        heights = [series.counts[r].get(decision, 0) for r in rounds]
        total = sum(heights)
        if total or decision in ("accept", "reject"):
            colour, _, label = DECISION_STYLE[decision]
            ax.bar(rounds, heights, bottom=bottom, color=colour, alpha=0.85, label=f"{label} ({total})", width=0.6)
            bottom = [b + h for b, h in zip(bottom, heights)]
    integer_x(ax, rounds)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set(xlabel="round", ylabel="gate decisions")
    ax.set_title("edits accepted vs rejected per round", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="best")


def training_figure(series: TrainingSeries, metric: str) -> Figure:
    figure = new_figure(14, 5.6)
    loss, accuracy = figure.subplots(1, 2)
    draw_loss(loss, series)
    draw_accuracy(accuracy, series, metric)
    return figure


def draw_loss(ax: Axes, series: TrainingSeries) -> None:
    ax.set_title("training loss per optimizer step", fontsize=10)
    if not series.loss:
        empty_note(ax, "no optimizer step recorded yet")
        return
    marker = "o" if len(series.loss) <= 30 else None
    ax.plot(*zip(*series.loss), c="#1f77b4", marker=marker, ms=4, label="loss (optimised objective)")
    for (name, values), colour in zip(series.extra_losses.items(), ("#ff7f0e", "#2ca02c", "#9467bd")):
        ax.plot(*zip(*values), c=colour, ls="--", marker=marker, ms=3, label=name.replace("_", " "))
    integer_x(ax, [s for s, _ in series.loss])
    ax.set(xlabel="optimizer step", ylabel="loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def draw_accuracy(ax: Axes, series: TrainingSeries, metric: str) -> None:
    ax.set_title(f"select {metric} per evaluated checkpoint", fontsize=10)
    if not series.select and not series.batch_accuracy:
        empty_note(ax, "no evaluation recorded yet")
        return
    if series.batch_accuracy:
        ax.plot(*zip(*series.batch_accuracy), c="#9ecae1", lw=1, marker=".", label=f"training {series.batch_label}")
    if series.select:
        ax.plot(*zip(*series.select), "o-", c="#1f77b4", ms=6, label=f"select {metric} (per chunk)")
    if series.warm_start is not None:
        ax.axhline(series.warm_start, ls="--", c="#7f7f7f", label=f"warm start (SFT): {series.warm_start:.3f}")
    final = series.final
    if final is not None and final.holdout is not None:
        ax.scatter([series.final_step], [final.holdout], marker="*", s=160, c="#d62728", zorder=4,
                   label=f"registered policy, holdout: {final.holdout:.3f}")
    steps = [s for s, _ in series.select] + [s for s, _ in series.batch_accuracy]
    integer_x(ax, steps)
    ax.set_ylim(-0.04, 1.04)
    ax.set(xlabel="optimizer steps taken", ylabel=f"{metric} (share of cases)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
