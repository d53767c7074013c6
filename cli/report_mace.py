"""mace's picture: left, test-split success per memory (the frozen memory, the starting
memory with the feedback update off, no memory) with the paired request-bootstrap 95% CI
of its difference from no memory; right, per co-learning round the train success of the
requests and the share of role injections in each form.

`mace_build` reads (SQL); `mace_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch
from tasks.gate.stats import paired_bootstrap_ci

TESTS = """
SELECT a.arm, a.task_id, a.result, n.result AS none_result
FROM mace_runs a JOIN mace_runs n ON n.run_id = a.run_id AND n.task_id = a.task_id AND n.phase = 'test'
     AND n.arm = 'no_memory'
WHERE a.run_id = $run AND a.phase = 'test' ORDER BY a.arm, a.task_id
"""
ROUNDS = """
SELECT round, avg(result) AS success, count(*) AS requests
FROM mace_runs WHERE run_id = $run AND phase = 'train' GROUP BY round ORDER BY round
"""
FORMS = """
SELECT round, form, count(*) AS n FROM mace_injections WHERE run_id = $run GROUP BY ALL ORDER BY round, form
"""
ORDER = ("memory", "no_feedback", "no_memory")
FORM_COLOURS = {"guideline": "#2ca02c", "checklist": "#1f77b4", "constraint": "#d62728", "none": "#bbbbbb"}


@dataclass(frozen=True)
class MaceSeries:
    arms: list[dict]
    """Per arm: test success, Δ vs no memory with its CI, requests."""
    rounds: list[dict]
    """Per round: train success, requests, and the injections per form."""


def mace_build(con, run_id: str) -> tuple[MaceSeries, str | None]:
    rows = fetch(con, TESTS, run=run_id)
    arms = []
    for arm in sorted({r["arm"] for r in rows}, key=lambda a: ORDER.index(a) if a in ORDER else 99):
        mine = [r for r in rows if r["arm"] == arm]
        d = [r["result"] - r["none_result"] for r in mine]
        arms.append({"arm": arm, "success": sum(r["result"] for r in mine) / len(mine), "delta": sum(d) / len(d),
                     "ci": paired_bootstrap_ci(d), "requests": len(mine)})
    forms: dict[int, dict[str, int]] = {}
    for r in fetch(con, FORMS, run=run_id):
        forms.setdefault(r["round"], {})[r["form"]] = r["n"]
    rounds = [{**r, "forms": forms.get(r["round"], {})} for r in fetch(con, ROUNDS, run=run_id)]
    return MaceSeries(arms, rounds), None if arms else "no test run recorded (the memory is not frozen yet)"


def mace_figure(series: MaceSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for y, arm in enumerate(series.arms):
        ax.barh(y, 100 * arm["success"], color="#1f77b4", alpha=0.8)
        low, high = arm["ci"]
        ax.annotate(f"{100 * arm['success']:.0f}%  (Δ vs no memory {100 * arm['delta']:+.0f} pp, "
                    f"CI [{100 * low:+.0f}, {100 * high:+.0f}])", (1, y), textcoords="offset points",
                    xytext=(2, 10), fontsize=8)
    ax.set_yticks(range(len(series.arms)), [a["arm"] for a in series.arms])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("test success, %")
    ax.set_title("test split under each memory (greedy selection)", fontsize=10)
    right = figure.add_subplot(1, 2, 2)
    width = 0.8 / len(FORM_COLOURS)
    for r in series.rounds:
        total = max(sum(r["forms"].values()), 1)
        for i, (form, colour) in enumerate(FORM_COLOURS.items()):
            right.bar(r["round"] - 0.4 + (i + 0.5) * width, 100 * r["forms"].get(form, 0) / total, width,
                      color=colour, label=form if r is series.rounds[0] else None)
    right.plot([r["round"] for r in series.rounds], [100 * r["success"] for r in series.rounds], "ko-",
               label="train success")
    right.set_xticks([r["round"] for r in series.rounds])
    right.set_xlabel("co-learning round")
    right.set_ylabel("%")
    right.legend(fontsize=7)
    right.set_title("train success and the forms the selector chose", fontsize=10)
    return figure


def mace_caption(series: MaceSeries) -> str:
    requests = series.arms[0]["requests"] if series.arms else 0
    return (f"MemGoG is co-learnt on train requests over {len(series.rounds)} rounds (units mined from the logs, "
            f"a (unit set, form) arm chosen per role), admitted by the select-split gate, then frozen; the {requests} "
            f"test requests run under the frozen memory, the starting memory (feedback off) and no memory. Left: "
            f"success with the paired request-bootstrap 95% CI of the difference from no memory.")
