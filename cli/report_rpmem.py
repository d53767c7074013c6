"""rpmem's picture: left, holdout recall against the number of sessions written into a
memory of constant size (the registered system, with a per-user bootstrap 95% CI); right,
the base swap: recall after 1 and after N sessions of a decoder trained with the encoder
and gate reused vs a system trained from scratch for the same steps.

`rpmem_build` reads (SQL); `rpmem_figure` draws."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from matplotlib.figure import Figure

from cli.report_data import fetch
from tasks.gate.stats import paired_bootstrap_ci

CURVE = """
SELECT q.n_sessions, q.user, avg(q.correct::INT) AS recall
FROM rpm_qa q JOIN registry g ON g.run_id = q.run_id AND g.candidate_id = q.candidate_id AND g.stage = 'stable'
WHERE q.run_id = $run GROUP BY ALL ORDER BY q.n_sessions, q.user
"""
SWAP = "SELECT base, decoder_init, setting, score, n_questions FROM rpm_swap WHERE run_id = $run ORDER BY ALL"
SIZE = "SELECT count(DISTINCT latent_hash) AS states, avg(write_ms) AS write_ms FROM rpm_sessions WHERE run_id = $run"


@dataclass(frozen=True)
class RPMemSeries:
    curve: list[dict]
    """Per number of sessions: holdout recall (mean over users), its CI, users."""
    swap: list[dict]
    """Per decoder init (reuse / scratch) and setting: recall on the other base."""
    write_ms: float | None


def rpmem_build(con, run_id: str) -> tuple[RPMemSeries, str | None]:
    by_n: dict[int, list[float]] = defaultdict(list)
    for r in fetch(con, CURVE, run=run_id):
        by_n[r["n_sessions"]].append(r["recall"])
    curve = [{"n": n, "recall": fmean(v), "ci": paired_bootstrap_ci(v), "users": len(v)} for n, v in sorted(by_n.items())]
    size = fetch(con, SIZE, run=run_id)
    series = RPMemSeries(curve, fetch(con, SWAP, run=run_id), size[0]["write_ms"] if size else None)
    return series, None if curve else "no holdout session written yet (the memory system is not frozen yet)"


def rpmem_figure(series: RPMemSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    ns = [c["n"] for c in series.curve]
    ax.plot(ns, [100 * c["recall"] for c in series.curve], "o-", color="#1f77b4")
    ax.fill_between(ns, [100 * c["ci"][0] for c in series.curve], [100 * c["ci"][1] for c in series.curve],
                    color="#1f77b4", alpha=0.2)
    ax.set_xticks(ns)
    ax.set_xlabel("sessions written into the memory (constant size)")
    ax.set_ylabel("holdout recall, %")
    ax.set_ylim(0, 100)
    ax.set_title("recall vs number of sessions", fontsize=10)
    right = figure.add_subplot(1, 2, 2)
    settings = sorted({s["setting"] for s in series.swap}, key=lambda s: int(s.split("=")[1]))
    for i, init in enumerate(("reuse", "scratch")):
        mine = {s["setting"]: s["score"] for s in series.swap if s["decoder_init"] == init}
        right.bar([j + 0.4 * i for j in range(len(settings))], [100 * mine.get(s, 0.0) for s in settings], 0.4,
                  label=init, color=("#2ca02c", "#7f7f7f")[i])
    right.set_xticks([j + 0.2 for j in range(len(settings))], settings)
    right.set_ylabel("holdout recall on the other base, %")
    right.set_ylim(0, 100)
    right.legend(fontsize=8)
    right.set_title("base swap: encoder + gate reused vs from scratch", fontsize=10)
    return figure


def rpmem_caption(series: RPMemSeries) -> str:
    users = series.curve[0]["users"] if series.curve else 0
    first = series.curve[0]["recall"] if series.curve else float("nan")
    last = series.curve[-1]["recall"] if series.curve else float("nan")
    ms = f"; a write takes {series.write_ms:.2f} ms per user" if series.write_ms is not None else ""
    return (f"The frozen memory system writes each of {users} holdout users' sessions in order into a memory of "
            f"constant size and answers every key after each: recall {100 * first:.0f}% after 1 session, "
            f"{100 * last:.0f}% after {len(series.curve)} (shaded: per-user bootstrap 95% CI){ms}. Right: on the "
            f"other base, a decoder trained with the encoder and gate reused vs a system trained from scratch "
            f"for the same steps.")
