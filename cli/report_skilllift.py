"""skilllift's picture: left, each outer round's rank agreement of the rubric with the
real results (Kendall tau-b with its bootstrap 95% CI over the round's executed skills);
right, every executed skill's real select success against the real episodes spent so far,
the champion's staircase over them, and each skill's rubric score (hollow, right axis).

`skilllift_build` reads (SQL); `skilllift_figure` draws."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from cli.report_data import fetch

KIND = "SELECT round, content FROM distillates WHERE run_id = $run AND kind = $kind ORDER BY round, distillate_id"
DECISIONS = ("SELECT round, candidate_id, decision, select_score, baseline_score FROM gate_decisions "
             "WHERE run_id = $run ORDER BY round")


@dataclass(frozen=True)
class SkillLiftSeries:
    calibration: list[dict[str, Any]]
    executed: list[dict[str, Any]]
    """Per executed skill (first execution order): round, real success, rubric score, episodes so far."""
    decisions: list[dict[str, Any]]


def skilllift_build(con, run_id: str) -> tuple[SkillLiftSeries, str | None]:
    def kind(name: str) -> list[dict]:
        return [json.loads(r["content"]) for r in fetch(con, KIND, run=run_id, kind=name)]

    skills = {s["id"]: s for s in kind("skilllift_skills") if s["executed"]}
    runs: dict[str, list[bool]] = {}
    for r in kind("skilllift_real_runs"):
        runs.setdefault(r["skill_id"], []).append(r["pass"])
    executed, spent = [], 0
    for skill_id, passes in runs.items():
        spent += len(passes)
        s = skills.get(skill_id, {})
        executed.append({"id": skill_id, "round": s.get("round", 0), "real": sum(passes) / len(passes),
                         "rubric": s.get("rubric_score"), "episodes": spent})
    series = SkillLiftSeries(kind("skilllift_calibration"), executed, fetch(con, DECISIONS, run=run_id))
    return series, None if executed else "no skill has been run for real"


def skilllift_figure(series: SkillLiftSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13.0, 5.0)
    draw_agreement(figure.add_subplot(1, 2, 1), series)
    draw_real(figure.add_subplot(1, 2, 2), series)
    return figure


def draw_agreement(ax: Axes, series: SkillLiftSeries) -> None:
    shown = [c for c in series.calibration if c["rank_corr"] is not None]
    for c in shown:
        low, high = c["ci_low"], c["ci_high"]
        err = [[c["rank_corr"] - low], [high - c["rank_corr"]]] if low is not None else None
        ax.errorbar(c["round"], c["rank_corr"], yerr=err, fmt="o", color="#1f77b4", capsize=3)
        ax.annotate(f"n={c['n_cands']}", (c["round"], c["rank_corr"]), xytext=(5, 0), textcoords="offset points",
                    fontsize=7)
    tied = [c["round"] for c in series.calibration if c["rank_corr"] is None]
    ax.scatter(tied, [0.0] * len(tied), marker="x", color="#777777", label="undefined (real or rubric scores all tied)")
    ax.axhline(0.0, color="#999999", linestyle=":")
    ax.set_xticks([c["round"] for c in series.calibration])
    if tied:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(-1.1, 1.1)
    ax.set_xlabel("outer round (the rubric version that chose the round's skills)")
    ax.set_ylabel("Kendall τ, rubric vs real ranking")
    ax.set_title("rank agreement per round, bootstrap 95% CI", fontsize=10)
    ax.grid(alpha=0.3)


def draw_real(ax: Axes, series: SkillLiftSeries) -> None:
    xs = [e["episodes"] for e in series.executed]
    ax.scatter(xs, [e["real"] for e in series.executed], color="#1f77b4", label="executed skill: real select success")
    best, stairs = None, []
    for e in series.executed:
        best = e["real"] if best is None else max(best, e["real"])
        stairs.append(best)
    ax.step(xs, stairs, where="post", color="#2ca02c", label="best real so far")
    twin = ax.twinx()
    twin.scatter(xs, [e["rubric"] for e in series.executed], facecolors="none", edgecolors="#ff7f0e",
                 label="its rubric score")
    twin.set_ylabel("rubric score", color="#ff7f0e")
    ax.set_xlabel("real episodes spent (select cases)")
    ax.set_ylabel("real select success")
    ax.set_title("real success vs real executions", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)


def skilllift_caption(series: SkillLiftSeries) -> str:
    taus = ", ".join(f"r{c['round']} {c['rank_corr']:+.2f}" if c["rank_corr"] is not None else f"r{c['round']} n/a"
                     for c in series.calibration)
    accepted = sum(d["decision"] == "accept" for d in series.decisions if d["round"] > 0)
    episodes = series.executed[-1]["episodes"] if series.executed else 0
    return (f"The inner loop scores skills on the rubric alone; the outer loop runs the top-k and the champion for "
            f"real. Kendall τ per round: {taus or 'none'}. {len(series.executed)} skills run for real in {episodes} "
            f"episodes; {accepted} new champions chosen by real results.")
