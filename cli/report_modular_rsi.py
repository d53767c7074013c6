"""modular_rsi's picture: left, every module edit per round, its gate-task success
before (the base) and after (the edit), coloured by module (filled: accepted, hollow:
rejected by a check); right, the seed and the frozen harness on the benchmark, in-domain
(pool templates) and held-out (never in the pool).

`modular_rsi_build` reads (SQL); `modular_rsi_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch

EDITS = """
SELECT e.round, e.module, e.accepted, e.gate_static, e.gate_overfit, e.gate_run, d.baseline_score, d.select_score
FROM mrsi_module_edits e JOIN gate_decisions d
  ON d.run_id = e.run_id AND d.candidate_id = e.candidate_id AND d.gate = 'mrsi_module' AND d.round = e.round
WHERE e.run_id = $run ORDER BY e.round, e.module"""
EVALS = """
SELECT role, benchmark, avg(CAST(passed AS DOUBLE)) AS rate, count(*) AS n
FROM mrsi_evals WHERE run_id = $run GROUP BY role, benchmark ORDER BY benchmark, role"""
MODULE_COLOURS = {"tool_wrapper": "#1f77b4", "observation": "#ff7f0e", "context": "#2ca02c",
                  "step_loop": "#d62728", "completion": "#9467bd", "whole": "#7f7f7f"}


@dataclass(frozen=True)
class ModularRSISeries:
    edits: list[dict[str, Any]]
    evals: list[dict[str, Any]]
    conflicts: int


def modular_rsi_build(con, run_id: str) -> tuple[ModularRSISeries, str | None]:
    conflicts = fetch(con, "SELECT coalesce(sum(len(conflicts)), 0) AS n FROM mrsi_integrations WHERE run_id = $run",
                      run=run_id)
    series = ModularRSISeries(fetch(con, EDITS, run=run_id), fetch(con, EVALS, run=run_id), int(conflicts[0]["n"]))
    return series, None if series.edits or series.evals else "no round has gated a module edit yet"


def modular_rsi_figure(series: ModularRSISeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13.0, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for i, e in enumerate(series.edits):
        colour = MODULE_COLOURS.get(e["module"], "#777777")
        x = e["round"] + 0.08 * (i % 5 - 2)
        if e["select_score"] is not None:
            ax.plot([x, x], [e["baseline_score"], e["select_score"]], color=colour, alpha=0.6)
        y = e["select_score"] if e["select_score"] is not None else 0.0
        ax.scatter([x], [y], color=colour if e["accepted"] else "none", edgecolors=colour, zorder=3)
    for module, colour in MODULE_COLOURS.items():
        ax.scatter([], [], color=colour, label=module)
    ax.set_xlabel("round")
    ax.set_ylabel("success on the gate's 2 batch tasks")
    ax.set_title("base -> edit, per module (filled: accepted; at 0 without a line: not run)", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    right = figure.add_subplot(1, 2, 2)
    labels = [f"{r['benchmark']}\n{r['role']} (n={r['n']})" for r in series.evals]
    colours = ["#bbbbbb" if r["role"] == "seed" else "#1f77b4" for r in series.evals]
    right.bar(range(len(series.evals)), [r["rate"] for r in series.evals], color=colours)
    right.set_xticks(range(len(series.evals)), labels, fontsize=8)
    right.set_ylim(0, 1)
    right.set_ylabel("benchmark (test split) success")
    right.set_title("seed vs frozen harness: in-domain and held-out templates", fontsize=10)
    right.grid(alpha=0.3, axis="y")
    return figure


def modular_rsi_caption(series: ModularRSISeries) -> str:
    modules = sorted({e["module"] for e in series.edits})
    parts = ", ".join(f"{m}: {sum(e['accepted'] for e in series.edits if e['module'] == m)}/"
                      f"{sum(e['module'] == m for e in series.edits)}" for m in modules)
    rates = {(r["role"], r["benchmark"]): r["rate"] for r in series.evals}
    held = (f" Held-out success {rates[('seed', 'held_out')]:.3f} -> {rates[('final', 'held_out')]:.3f}."
            if ("seed", "held_out") in rates and ("final", "held_out") in rates else "")
    return (f"Each module edits the round's base; an edit is accepted when it parses and changes only its module, "
            f"names no template or case value, and solves no fewer of 2 batch tasks (not proof it helps). "
            f"Accepted/gated: {parts or 'none'}; integration conflicts: {series.conflicts}.{held}")
