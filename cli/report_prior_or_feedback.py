"""prior_or_feedback's picture: left, each proposer's best validation nRMSE so far against
the trial (mean over its searches), with the final test nRMSE in the legend; right, each
proposer's feedback sensitivity (mean distance of the proposal under permuted scores (c)
minus under the control seed (d)) per search, with the verdict's bootstrap CI from
gate_decisions: random search is the negative control, TPE the positive one.

`prior_or_feedback_build` reads (SQL); `prior_or_feedback_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch

BEST_SO_FAR = """
SELECT proposer, t, avg(best) AS best, count(*) AS searches FROM (
    SELECT r.proposer, t.t, min(t.val_nrmse) OVER (PARTITION BY t.search_id ORDER BY t.t) AS best
    FROM pof_trials t JOIN pof_runs r USING (run_id, search_id) WHERE t.run_id = $run)
GROUP BY ALL ORDER BY proposer, t
"""
PER_SEARCH = """
SELECT r.proposer, r.search_id, any_value(f.test_nrmse) AS test,
       avg(p.norm_distance) FILTER (WHERE p.intervention = 'permuted')
         - avg(p.norm_distance) FILTER (WHERE p.intervention = 'control') AS sensitivity
FROM pof_runs r JOIN pof_final_test f USING (run_id, search_id)
     LEFT JOIN pof_replays p USING (run_id, search_id)
WHERE r.run_id = $run GROUP BY ALL ORDER BY r.proposer, r.search_id
"""
VERDICTS = ("SELECT substr(gate, 5) AS proposer, decision, delta, ci_low, ci_high, n_cases FROM gate_decisions "
            "WHERE run_id = $run AND gate LIKE 'pof:%' ORDER BY proposer")
ORDER = ("random", "tpe", "prior", "llm")
COLOURS = {"random": "#7f7f7f", "tpe": "#1f77b4", "prior": "#d62728", "llm": "#2ca02c"}


@dataclass(frozen=True)
class PriorOrFeedbackSeries:
    curves: dict[str, list[tuple[int, float]]]
    """proposer -> (trial, mean best validation nRMSE so far)."""
    searches: dict[str, list[dict]]
    """proposer -> per search: test nRMSE and feedback sensitivity (None without replays)."""
    verdicts: dict[str, dict]
    """proposer -> its gate decision: decision, delta (mean sensitivity), ci_low, ci_high."""


def _ordered(names) -> list[str]:
    return sorted(names, key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p))


def prior_or_feedback_build(con, run_id: str) -> tuple[PriorOrFeedbackSeries, str | None]:
    curves: dict[str, list[tuple[int, float]]] = {}
    for row in fetch(con, BEST_SO_FAR, run=run_id):
        curves.setdefault(row["proposer"], []).append((row["t"], row["best"]))
    searches: dict[str, list[dict]] = {}
    for row in fetch(con, PER_SEARCH, run=run_id):
        searches.setdefault(row["proposer"], []).append({"test": row["test"], "sensitivity": row["sensitivity"]})
    verdicts = {row["proposer"]: row for row in fetch(con, VERDICTS, run=run_id)}
    series = PriorOrFeedbackSeries(curves, searches, verdicts)
    return series, None if searches else "no search has finished its final test"


def prior_or_feedback_figure(series: PriorOrFeedbackSeries) -> Figure:
    from matplotlib.ticker import MaxNLocator

    from cli.report_draw import new_figure

    figure = new_figure(13.0, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for proposer in _ordered(series.curves):
        ts, best = zip(*series.curves[proposer])
        tests = [s["test"] for s in series.searches.get(proposer, [])]
        label = f"{proposer} (test {sum(tests) / len(tests):.4f})" if tests else proposer
        ax.plot(ts, best, marker="o", markersize=3, color=COLOURS.get(proposer, "#9467bd"), label=label)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial t")
    ax.set_ylabel("best validation nRMSE so far (mean over searches)")
    ax.set_title("search progress; legend: mean final test nRMSE", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    right = figure.add_subplot(1, 2, 2)
    names = _ordered(series.searches)
    for y, proposer in enumerate(names):
        colour = COLOURS.get(proposer, "#9467bd")
        values = [s["sensitivity"] for s in series.searches[proposer] if s["sensitivity"] is not None]
        right.scatter(values, [y] * len(values), color=colour, alpha=0.4, s=14)
        v = series.verdicts.get(proposer)
        if v and v["delta"] is not None:
            low, high = v["ci_low"], v["ci_high"]
            right.errorbar(v["delta"], y, xerr=[[v["delta"] - low], [high - v["delta"]]], fmt="D", color=colour,
                           capsize=4)
            right.annotate(f"{v['delta']:+.3f} ({'uses feedback' if v['decision'] == 'accept' else 'no evidence'})",
                           (v["delta"], y), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    right.axvline(0.0, color="#999999", linestyle=":")
    right.set_yticks(range(len(names)), names)
    right.invert_yaxis()
    right.set_xlabel("feedback sensitivity d(permuted) − d(control), normalised config distance")
    right.set_title("per search (dots) and mean with 95% bootstrap CI", fontsize=10)
    right.grid(axis="x", alpha=0.3)
    return figure


def prior_or_feedback_caption(series: PriorOrFeedbackSeries) -> str:
    n = {p: len(series.searches[p]) for p in _ordered(series.searches)}
    parts = []
    for proposer in _ordered(series.verdicts):
        v = series.verdicts[proposer]
        if v["delta"] is not None:
            parts.append(f"{proposer} {v['delta']:+.3f} [{v['ci_low']:+.3f}, {v['ci_high']:+.3f}]")
    return (f"Every proposer searches the same pde1d conditions and seeds ({', '.join(f'{p}: {k}' for p, k in n.items())} "
            f"searches); the best-validation config of each search is tested once on the holdout. Replays at recorded "
            f"decision points: (c) the validation scores permuted among the evaluated configs, (d) the same scores "
            f"with another RNG seed; sensitivity is the mean distance of (c) minus (d), a distance over the config "
            f"space in [0, 1] where one categorical change is 1/6. Random search is the negative control, TPE the "
            f"positive one. Sensitivity: {'; '.join(parts) or 'no verdict yet'}.")
