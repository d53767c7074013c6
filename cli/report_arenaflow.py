"""arenaflow's picture: left, each round's sampled-trajectory success and the share of
trajectories whose tournament score put them above the bracket's first round; right,
the skills the gate admitted and pruned per round. The caption quotes the final policy
gate (against the untrained policy, paired on select) and the champion.

`arenaflow_build` reads (SQL); `arenaflow_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch, gate_reason, last_registered

ROUNDS = ("SELECT round, avg(success::INT) AS success, avg((score > 1)::INT) AS advanced, count(*) AS n "
          "FROM af_trajectories WHERE run_id = $run GROUP BY round ORDER BY round")
SKILLS = ("SELECT round, decision, count(*) AS n FROM gate_decisions WHERE run_id = $run AND gate = 'af_skill' "
          "GROUP BY round, decision ORDER BY round")


@dataclass(frozen=True)
class ArenaFlowSeries:
    rounds: list[dict[str, Any]]
    skills: list[dict[str, Any]]
    policy: str | None
    champion: dict[str, Any] | None


def arenaflow_build(con, run_id: str) -> tuple[ArenaFlowSeries, str | None]:
    rounds = fetch(con, ROUNDS, run=run_id)
    series = ArenaFlowSeries(rounds, fetch(con, SKILLS, run=run_id), gate_reason(con, run_id, "af_policy"),
                             last_registered(con, run_id))
    return series, None if rounds else "no round has been played"


def arenaflow_figure(series: ArenaFlowSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13, 5)
    left, right = figure.subplots(1, 2)
    rounds = [r["round"] for r in series.rounds]
    left.plot(rounds, [r["success"] for r in series.rounds], marker="o", color="#1f77b4",
              label="sampled trajectories: success")
    left.set_xticks(rounds)
    left.set_ylim(0, 1)
    left.set_title("what the policy samples, per round", fontsize=10)
    left.set_xlabel("round")
    left.set_ylabel("success")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    for offset, (decision, color) in enumerate((("accept", "#2ca02c"), ("reject", "#d62728"))):
        counts = [sum(s["n"] for s in series.skills if s["round"] == r and s["decision"] == decision) for r in rounds]
        right.bar([r + (offset - 0.5) * 0.4 for r in rounds], counts, width=0.4, color=color,
                  label="admitted" if decision == "accept" else "pruned")
    right.set_xticks(rounds)
    right.set_title("skill library: gate decisions per round", fontsize=10)
    right.set_xlabel("round")
    right.set_ylabel("skills")
    right.legend(fontsize=8)
    right.grid(alpha=0.3, axis="y")
    return figure


def arenaflow_caption(series: ArenaFlowSeries) -> str:
    admitted = sum(s["n"] for s in series.skills if s["decision"] == "accept")
    pruned = sum(s["n"] for s in series.skills if s["decision"] == "reject")
    champion = series.champion
    held = " No champion registered." if champion is None else (
        f" Champion {champion['candidate_id'][:10]} (policy + library; held-out {champion['holdout_score']:.3f}).")
    policy = f" Final gate: {series.policy}." if series.policy else ""
    return (f"{len(series.rounds)} rounds, {admitted} skills admitted from champions' key steps, {pruned} pruned "
            f"(utility still negative after enough observations).{policy}{held}")
