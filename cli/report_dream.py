"""dream_rsi's picture: each real round's discovery curve (best select score so far
against attempts, the policy that scheduled it named), and each dream's rehearsals
(mean replay cost of every policy TPE tried, the current policy and the pick marked).

`dream_build` reads (SQL); `dream_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

KINDS = """
SELECT round, kind, content FROM distillates
WHERE run_id = $run AND kind IN ('dream_node', 'dream_real_round', 'dream_replay_eval') ORDER BY round
"""
PICKS = "SELECT round, candidate_id, decision FROM gate_decisions WHERE run_id = $run"


@dataclass(frozen=True)
class DreamSeries:
    nodes: dict[int, list[dict[str, Any]]]
    rounds: list[dict[str, Any]]
    replays: dict[int, dict[str, float]]
    """dream round -> policy id -> mean replay cost over the pool."""
    accepted: dict[int, str]


def dream_build(con, run_id: str) -> tuple[DreamSeries, str | None]:
    nodes: dict[int, list[dict[str, Any]]] = {}
    rounds: list[dict[str, Any]] = []
    costs: dict[int, dict[str, list[float]]] = {}
    for row in fetch(con, KINDS, run=run_id):
        body = json.loads(row["content"])
        if row["kind"] == "dream_node":
            nodes.setdefault(row["round"], []).append(body)
        elif row["kind"] == "dream_real_round":
            rounds.append(body)
        else:
            costs.setdefault(row["round"], {}).setdefault(body["policy_id"], []).append(body["cost"])
    replays = {r: {p: sum(v) / len(v) for p, v in by.items()} for r, by in costs.items()}
    accepted = {r["round"]: r["candidate_id"] for r in fetch(con, PICKS, run=run_id) if r["decision"] == "accept"}
    series = DreamSeries(nodes, sorted(rounds, key=lambda r: r["round"]), replays, accepted)
    return series, None if rounds else "no real round has finished"


def dream_figure(series: DreamSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(14, 5.6)
    grid = figure.add_gridspec(1, 2, width_ratios=(1.3, 1))
    draw_discovery(figure.add_subplot(grid[0, 0]), series)
    draw_dreams(figure.add_subplot(grid[0, 1]), series)
    return figure


def draw_discovery(ax: Axes, series: DreamSeries) -> None:
    ax.set_title("real rounds: best select score so far against attempts", fontsize=10)
    for record in series.rounds:
        ordered = sorted(series.nodes.get(record["round"], []), key=lambda n: n["order"])
        best, curve = float("-inf"), []
        for node in ordered:
            best = max(best, node["score"])
            curve.append(best)
        ax.step(range(len(curve)), curve, where="post", marker=".",
                label=f"round {record['round']}: policy {record['policy_id'][:8]}, {record['discovery_calls']} calls")
    ax.set_xlabel("attempts (child programs evaluated)")
    ax.set_ylabel("best select score so far")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def draw_dreams(ax: Axes, series: DreamSeries) -> None:
    ax.set_title("dreams: mean replay cost of each rehearsed policy (lower is better)", fontsize=10)
    for r, by_policy in sorted(series.replays.items()):
        current = next((x["policy_id"] for x in series.rounds if x["round"] == r - 1), None)
        values = sorted(by_policy.items(), key=lambda p: p[1])
        ax.scatter([r] * len(values), [v for _, v in values], color="#888888", s=14, alpha=0.7)
        if current in by_policy:
            ax.scatter([r], [by_policy[current]], color="#1f77b4", s=60, marker="s", zorder=3)
        chosen = series.accepted.get(r)
        if chosen in by_policy:
            ax.scatter([r], [by_policy[chosen]], color="#d62728", s=60, zorder=4)
    ax.scatter([], [], color="#888888", s=14, label="a TPE candidate")
    ax.scatter([], [], color="#1f77b4", s=60, marker="s", label="the current policy (kept on ties)")
    ax.scatter([], [], color="#d62728", s=60, label="accepted (beat the current policy)")
    ax.set_xticks(sorted(series.replays) or [1])
    ax.set_xlabel("dream (before real round)")
    ax.set_ylabel("mean replay cost (>1: a tree's best not reached)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def dream_caption(series: DreamSeries) -> str:
    rounds = ", ".join(f"round {r['round']}: best {r['best_score']:.5g} in {r['discovery_calls']} calls, "
                       f"target reached after {r['calls_to_target']}" for r in series.rounds)
    return ("Left: each real round's search from the seed program under the policy the previous dream chose. "
            "Right: every policy rehearsed in each dream on the recorded trees only (a never-tried child is "
            f"unavailable); the current policy is always rehearsed, so the pick never replays worse. {rounds}.")
