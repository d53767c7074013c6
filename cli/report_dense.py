"""dense's picture: per feedback method, the retry's strict pass over the initial run
(per task, repeats averaged inside a task) with its task-bootstrap 95% CI, beside the
retry's tool calls relative to the initial run; the caption counts the memories the gate
admitted.

`dense_build` reads (SQL); `dense_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch
from tasks.gate.stats import paired_bootstrap_ci

PER_TASK = """
SELECT r.feedback_method AS method, r.task_id, avg(r.passed::INT) - avg(i.passed::INT) AS d_pass,
       avg(r.tool_calls) AS calls, avg(i.tool_calls) AS initial_calls, avg(r.tokens) AS tokens
FROM attempts r JOIN attempts i ON i.run_id = r.run_id AND i.task_id = r.task_id AND i.repeat = r.repeat
     AND i.phase = 'initial'
WHERE r.run_id = $run AND r.phase = 'retry'
GROUP BY ALL ORDER BY method, task_id
"""
MEMORY = ("SELECT decision, count(*) AS n FROM gate_decisions WHERE run_id = $run AND gate = 'dense_memory' "
          "GROUP BY ALL")
ORDER = ("none", "raw", "flat", "tree", "tree_nsr", "labelled")


@dataclass(frozen=True)
class DenseSeries:
    methods: list[dict]
    """One per method: mean Δpass, its CI, relative tool calls, mean tokens, tasks."""
    memory: dict[str, int]


def dense_build(con, run_id: str) -> tuple[DenseSeries, str | None]:
    rows = fetch(con, PER_TASK, run=run_id)
    methods = []
    for method in sorted({r["method"] for r in rows}, key=lambda m: ORDER.index(m) if m in ORDER else 99):
        mine = [r for r in rows if r["method"] == method]
        d = [r["d_pass"] for r in mine]
        low, high = paired_bootstrap_ci(d)
        initial = fmean(r["initial_calls"] for r in mine)
        methods.append({"method": method, "d_pass": fmean(d), "ci": (low, high), "tasks": len(mine),
                        "calls": (fmean(r["calls"] for r in mine) - initial) / initial if initial else 0.0,
                        "tokens": fmean(r["tokens"] for r in mine)})
    memory = {r["decision"]: r["n"] for r in fetch(con, MEMORY, run=run_id)}
    return DenseSeries(methods, memory), None if methods else "no retry recorded"


def dense_figure(series: DenseSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    draw_pass(figure.add_subplot(1, 2, 1), series)
    draw_calls(figure.add_subplot(1, 2, 2), series)
    return figure


def draw_pass(ax: Axes, series: DenseSeries) -> None:
    for y, m in enumerate(series.methods):
        low, high = m["ci"]
        colour = "#d62728" if low > 0 else "#555555"
        ax.errorbar(100 * m["d_pass"], y, xerr=[[100 * (m["d_pass"] - low)], [100 * (high - m["d_pass"])]],
                    fmt="o", color=colour, capsize=4)
        ax.annotate(f"{100 * m['d_pass']:+.1f} pp", (100 * m["d_pass"], y), textcoords="offset points",
                    xytext=(0, 8), ha="center", fontsize=8)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(range(len(series.methods)), [m["method"] for m in series.methods])
    ax.invert_yaxis()
    ax.set_xlabel("retry − initial strict pass, pp (red: CI excludes 0)")
    ax.set_title("strict pass over the initial run, 95% task-bootstrap CI", fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def draw_calls(ax: Axes, series: DenseSeries) -> None:
    ys = range(len(series.methods))
    ax.barh(list(ys), [100 * m["calls"] for m in series.methods], color="#1f77b4")
    for y, m in zip(ys, series.methods):
        ax.annotate(f"{m['tokens']:.0f} tokens read", (0, y), textcoords="offset points", xytext=(4, -3),
                    fontsize=7)
    ax.axvline(0.0, color="#999999", linestyle=":")
    ax.set_yticks(list(ys), [m["method"] for m in series.methods])
    ax.invert_yaxis()
    ax.set_xlabel("retry tool calls relative to the initial run, %")
    ax.set_title("retry cost (the paper: retry tokens)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def dense_caption(series: DenseSeries) -> str:
    tasks = series.methods[0]["tasks"] if series.methods else 0
    admitted, total = series.memory.get("accept", 0), sum(series.memory.values())
    return (f"Every method's feedback is written from the same initial trajectory of each of {tasks} tasks and "
            f"retried on the same fresh noise; only 'labelled' saw the hidden outcome. Left: retry − initial strict "
            f"pass per task (repeats averaged inside a task). Right: retry tool calls relative to the initial run, "
            f"with the feedback tokens each method's receiver read. Memory gate: {admitted} of {total} select "
            f"tasks' tree memories admitted and registered.")
