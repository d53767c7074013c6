"""moscopt's picture: left, each edit round's validation success before and after its
edit (filled: accepted, hollow: rejected), coloured by stage (1 skill edit, 2 G edit,
3 pool edit, 0 all at once); right, every skill's success rate over the train episodes
it was loaded on (the shared, co-occurrence credit the spec warns about), at the last
round, with its loads as n.

`moscopt_build` reads (SQL); `moscopt_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch

KIND = "SELECT round, content FROM distillates WHERE run_id = $run AND kind = $kind ORDER BY round, distillate_id"
STAGE_COLOURS = {0: "#9467bd", 1: "#1f77b4", 2: "#ff7f0e", 3: "#2ca02c"}


@dataclass(frozen=True)
class MoscoptSeries:
    edits: list[dict[str, Any]]
    stats: list[dict[str, Any]]
    """The last round's (id, n_active, n_success) per skill."""
    names: dict[str, str]


def moscopt_build(con, run_id: str) -> tuple[MoscoptSeries, str | None]:
    def kind(name: str) -> list[dict]:
        return [json.loads(r["content"]) for r in fetch(con, KIND, run=run_id, kind=name)]

    stats = kind("moscopt_skill_stats")
    last = max((s["round"] for s in stats), default=None)
    names = {s["id"]: json.loads(s["text"])["name"] for s in kind("moscopt_skills")}
    series = MoscoptSeries(kind("moscopt_edits"), [s for s in stats if s["round"] == last], names)
    return series, None if series.edits else "no edit round has run"


def moscopt_figure(series: MoscoptSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13.0, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for e in series.edits:
        colour = STAGE_COLOURS.get(e["stage"], "#777777")
        ax.plot([e["round"], e["round"]], [e["val_before"], e["val_after"]], color=colour, alpha=0.6)
        ax.scatter([e["round"]], [e["val_after"]], color=colour if e["accepted"] else "none", edgecolors=colour, zorder=3)
    for stage, colour in STAGE_COLOURS.items():
        ax.scatter([], [], color=colour, label=f"stage {stage}" if stage else "all at once")
    ax.set_xticks(sorted({e["round"] for e in series.edits}))
    ax.set_xlabel("edit round")
    ax.set_ylabel("validation (select) success")
    ax.set_title("before -> after each edit (filled: accepted)", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    right = figure.add_subplot(1, 2, 2)
    shown = sorted(series.stats, key=lambda s: -s["n_active"])
    rates = [s["n_success"] / s["n_active"] if s["n_active"] else 0.0 for s in shown]
    right.bar(range(len(shown)), rates, color="#1f77b4")
    right.set_xticks(range(len(shown)), [f"{series.names.get(s['id'], s['id'][:8])[:18]}\nn={s['n_active']}"
                                         for s in shown], fontsize=7, rotation=30)
    right.set_ylim(0, 1)
    right.set_ylabel("success rate of episodes it was loaded on")
    right.set_title("skill statistics (shared credit, not causal)", fontsize=10)
    right.grid(alpha=0.3, axis="y")
    return figure


def moscopt_caption(series: MoscoptSeries) -> str:
    by_stage = {s: [e for e in series.edits if e["stage"] == s] for s in sorted({e["stage"] for e in series.edits})}
    parts = ", ".join(f"stage {s}: {sum(e['accepted'] for e in es)}/{len(es)}" for s, es in by_stage.items())
    return (f"Each round proposes one edit of its stage and accepts it only if validation success improves. "
            f"Accepted/proposed: {parts or 'none'}. Skill rates share each episode's outcome among all loaded skills.")
