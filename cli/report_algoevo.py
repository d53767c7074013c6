"""algoevo's picture: left, each task's best-so-far select score over its evaluations, as
the gain over its seed program (the tasks' scales differ; the held-out task dashed);
right, every operator family's mean Δ per source task as the last gate saw it (a family
marked * was promoted into the skill the held-out task loaded).

`algoevo_build` reads (SQL); `algoevo_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch

RUNS = ("SELECT position, task_id, split, root_score, best, evals_to_best, skill_ver FROM ae_task_runs "
        "WHERE run_id = $run ORDER BY position")
CARDS = ("SELECT position, eval_idx, after, delta IS NOT NULL AS valid FROM ae_cards WHERE run_id = $run "
         "ORDER BY position, eval_idx")
PATTERNS = ("SELECT family, effects, promoted, after_task FROM ae_patterns WHERE run_id = $run "
            "AND after_task = (SELECT max(after_task) FROM ae_patterns WHERE run_id = $run) ORDER BY family")


@dataclass(frozen=True)
class AlgoEvoSeries:
    tasks: list[dict]
    """Per task position: task_id, split, root_score, best, evals_to_best and `gains`, the
    best-so-far minus the root score after each evaluation (the root is 0)."""
    patterns: list[dict]
    """The last gate's patterns: family, effects (task -> mean Δ), promoted."""


def gains(root: float, cards: list[dict]) -> list[float]:
    out, best = [0.0], root
    for c in cards:
        if c["valid"]:
            best = max(best, c["after"])
        out.append(best - root)
    return out


def algoevo_build(con, run_id: str) -> tuple[AlgoEvoSeries, str | None]:
    runs = fetch(con, RUNS, run=run_id)
    cards = fetch(con, CARDS, run=run_id)
    tasks = [{**r, "gains": gains(r["root_score"], [c for c in cards if c["position"] == r["position"]])}
             for r in runs]
    patterns = [{**p, "effects": json.loads(p["effects"])} for p in fetch(con, PATTERNS, run=run_id)]
    series = AlgoEvoSeries(tasks, patterns)
    return series, None if tasks else "no task has finished its search"


def algoevo_figure(series: AlgoEvoSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13.0, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for t in series.tasks:
        ax.step(range(len(t["gains"])), t["gains"], where="post", linestyle="--" if t["split"] == "heldout" else "-",
                label=f"{t['position']}: {t['task_id']} ({t['split']})")
    ax.set_xlabel("evaluation within the task")
    ax.set_ylabel("best-so-far select score − seed program's")
    ax.set_title("search per task (held-out dashed)", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    right = figure.add_subplot(1, 2, 2)
    sources = sorted({task for p in series.patterns for task in p["effects"]})
    width = 0.8 / max(1, len(sources))
    for i, task in enumerate(sources):
        right.bar([j + i * width for j in range(len(series.patterns))],
                  [p["effects"].get(task, 0.0) for p in series.patterns], width, label=task)
    right.axhline(0.0, color="black", linewidth=0.8)
    right.set_xticks([j + width * (len(sources) - 1) / 2 for j in range(len(series.patterns))],
                     [p["family"] + (" *" if p["promoted"] else "") for p in series.patterns], fontsize=8)
    right.set_ylabel("family's mean Δ on the task (as gated)")
    right.set_title("patterns after the last source task (* promoted)", fontsize=10)
    if sources:
        right.legend(fontsize=8)
    right.grid(alpha=0.3, axis="y")
    return figure


def algoevo_caption(series: AlgoEvoSeries) -> str:
    promoted = [p["family"] for p in series.patterns if p["promoted"]]
    held = [t for t in series.tasks if t["split"] == "heldout"]
    tail = "" if not held else (f" The held-out {held[-1]['task_id']} gained {held[-1]['gains'][-1]:+.4f} over its seed "
                                f"program (best first reached at evaluation {held[-1]['evals_to_best']}).")
    return (f"Each task searches from its own seed program with the skill as it stood; a family is promoted "
            f"when its mean Δ is positive on at least 2 distinct source tasks. Promoted: "
            f"{', '.join(promoted) or 'none'}.{tail}")
