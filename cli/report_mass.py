"""mass's picture: left, the inner loop per generation (train success of the kept
workflow and of its best child); right, held-out success and mean tool calls of the
seed and evolved workflows, the old and distilled policies and the optimizer check (the
evolved workflow run by the old policy). The caption quotes the policy gate and the
champion.

`mass_build` reads (SQL); `mass_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch, gate_reason, last_registered

GENERATIONS = ("SELECT round AS gen, decision, select_score AS child, baseline_score AS parent FROM gate_decisions "
               "WHERE run_id = $run AND gate = 'mass_workflow' ORDER BY round")
MODELS = ("SELECT model_gen, avg(score) AS success, avg(out_tokens) AS calls, count(*) AS n FROM mass_evals "
          "WHERE run_id = $run AND bench = 'holdout' GROUP BY model_gen ORDER BY model_gen")


@dataclass(frozen=True)
class MassSeries:
    generations: list[dict[str, Any]]
    models: list[dict[str, Any]]
    policy: str | None
    champion: dict[str, Any] | None


def mass_build(con, run_id: str) -> tuple[MassSeries, str | None]:
    generations = fetch(con, GENERATIONS, run=run_id)
    series = MassSeries(generations, fetch(con, MODELS, run=run_id), gate_reason(con, run_id, "mass_policy"),
                        last_registered(con, run_id))
    return series, None if generations else "no generation has been gated"


def mass_figure(series: MassSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13, 5)
    left, right = figure.subplots(1, 2)
    gens = [g["gen"] for g in series.generations]
    left.plot(gens, [g["parent"] for g in series.generations], marker="o", color="#1f77b4", label="parent workflow")
    left.plot(gens, [g["child"] for g in series.generations], marker="x", color="#ff7f0e", label="best child")
    left.set_xticks(gens)
    left.set_ylim(0, 1)
    left.set_title("inner loop: train success per generation", fontsize=10)
    left.set_xlabel("generation")
    left.set_ylabel("success")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    names = [m["model_gen"] for m in series.models]
    right.bar(range(len(names)), [m["success"] for m in series.models], color="#2ca02c")
    for i, m in enumerate(series.models):
        right.annotate(f"{m['calls']:.1f} calls", (i, m["success"]), ha="center", va="bottom", fontsize=7)
    right.set_xticks(range(len(names)))
    right.set_xticklabels(names, rotation=20, fontsize=7)
    right.set_ylim(0, 1.1)
    right.set_title("held-out success (mean tool calls above each bar)", fontsize=10)
    right.grid(alpha=0.3, axis="y")
    return figure


def mass_caption(series: MassSeries) -> str:
    accepted = sum(g["decision"] == "accept" for g in series.generations)
    champion = series.champion
    held = " No champion registered." if champion is None else (
        f" Champion {champion['candidate_id'][:10]} (distilled policy; held-out {champion['holdout_score']:.3f}).")
    policy = f" Policy gate: {series.policy}." if series.policy else ""
    return (f"{len(series.generations)} generations, {accepted} kept a child (net pairwise wins >= 0)."
            f"{policy}{held}")
