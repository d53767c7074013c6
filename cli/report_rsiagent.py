"""rsiagent's picture: left, target-split binary success per test-time memory (frozen,
breadth-only, none) with the paired task-bootstrap 95% CI of its difference from no
memory, partial success beside it; right, per practice round the verified success of the
attempts and the memory's size, coloured by phase (breadth / depth).

`rsiagent_build` reads (SQL); `rsiagent_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch
from tasks.gate.stats import paired_bootstrap_ci

TARGETS = """
SELECT a.arm, a.task_id, a.binary::INT AS binary, a.partial, n.binary::INT AS none_binary
FROM rsa_test_runs a JOIN rsa_test_runs n ON n.run_id = a.run_id AND n.task_id = a.task_id AND n.arm = 'none'
WHERE a.run_id = $run ORDER BY a.arm, a.task_id
"""
ROUNDS = """
SELECT p.round, any_value(p.phase) AS phase, avg(r.verdict::INT) AS verified, count(*) AS tasks,
       count(DISTINCT p.template) AS templates
FROM rsa_runs r JOIN rsa_practice p USING (run_id, task_id)
WHERE r.run_id = $run AND r.role = 'attempt' GROUP BY p.round ORDER BY p.round
"""
SIZES = """
SELECT c.round - 1 AS round, count(m.entry_id) AS entries
FROM candidates c JOIN rsa_memory m ON m.run_id = c.run_id AND m.ver = c.candidate_id
WHERE c.run_id = $run AND c.operator = 'distill' GROUP BY ALL ORDER BY round
"""
ORDER = ("frozen", "breadth", "none")


@dataclass(frozen=True)
class RSIAgentSeries:
    arms: list[dict]
    """Per arm: binary and partial success, Δ binary vs none with its CI, tasks."""
    rounds: list[dict]
    """Per practice round: phase, verified success, tasks, templates seen, memory entries proposed."""


def rsiagent_build(con, run_id: str) -> tuple[RSIAgentSeries, str | None]:
    rows = fetch(con, TARGETS, run=run_id)
    arms = []
    for arm in sorted({r["arm"] for r in rows}, key=lambda a: ORDER.index(a) if a in ORDER else 99):
        mine = [r for r in rows if r["arm"] == arm]
        d = [r["binary"] - r["none_binary"] for r in mine]
        arms.append({"arm": arm, "binary": sum(r["binary"] for r in mine) / len(mine),
                     "partial": sum(r["partial"] for r in mine) / len(mine), "delta": sum(d) / len(d),
                     "ci": paired_bootstrap_ci(d), "tasks": len(mine)})
    sizes = {r["round"]: r["entries"] for r in fetch(con, SIZES, run=run_id)}
    rounds = [{**r, "entries": sizes.get(r["round"])} for r in fetch(con, ROUNDS, run=run_id)]
    return RSIAgentSeries(arms, rounds), None if arms else "no target run recorded (the memory is not frozen yet)"


def rsiagent_figure(series: RSIAgentSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for y, arm in enumerate(series.arms):
        ax.barh(y, 100 * arm["binary"], color="#1f77b4", alpha=0.8)
        ax.plot(100 * arm["partial"], y, "k|", markersize=14)
        low, high = arm["ci"]
        ax.annotate(f"{100 * arm['binary']:.0f}%  (Δ vs none {100 * arm['delta']:+.0f} pp, "
                    f"CI [{100 * low:+.0f}, {100 * high:+.0f}])", (1, y), textcoords="offset points",
                    xytext=(2, 10), fontsize=8)
    ax.set_yticks(range(len(series.arms)), [a["arm"] for a in series.arms])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("target success, % (bar: binary; tick: partial)")
    ax.set_title("target split under each frozen memory", fontsize=10)
    right = figure.add_subplot(1, 2, 2)
    colours = {"breadth": "#2ca02c", "depth": "#d62728"}
    for r in series.rounds:
        right.bar(r["round"], 100 * r["verified"], color=colours.get(r["phase"], "#555555"))
        if r["entries"] is not None:
            right.annotate(f"{r['entries']} entries", (r["round"], 100 * r["verified"]), textcoords="offset points",
                           xytext=(0, 4), ha="center", fontsize=7)
    right.set_xlabel("practice round (green: breadth, red: depth)")
    right.set_ylabel("verified success of the attempts, %")
    right.set_title("practice: verified success and memory size", fontsize=10)
    return figure


def rsiagent_caption(series: RSIAgentSeries) -> str:
    tasks = series.arms[0]["tasks"] if series.arms else 0
    seen = max((r["templates"] for r in series.rounds), default=0)
    return (f"The memory is built only from train-split practice ({len(series.rounds)} rounds, up to {seen} templates "
            f"a round), every entry from a recovery the verifier passed, then frozen; the {tasks} target tasks run "
            f"under each frozen snapshot with no memory update. Left: binary success (partial as a tick), with the "
            f"paired task-bootstrap 95% CI of the difference from no memory.")
