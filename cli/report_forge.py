"""forge's picture: left, per step the best validation success (the prompt in force) and
the batch score of the prompt in force, with the steps where stagnation opened the data
gate marked; right, per synthesis strategy the instances generated and those the verifier
admitted (valid and targeting their failure mode).

`forge_build` reads (SQL); `forge_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch

STEPS = """
SELECT s.step, s.best_val, s.steps_since_improve, s.synthesized,
       avg(t.score) AS batch, count(t.id) AS batch_size, sum(t.synthetic::INT) AS synthetic
FROM fg_stagnation s LEFT JOIN fg_trajs t ON t.run_id = s.run_id AND t.step = s.step AND t.role = 'current'
WHERE s.run_id = $run GROUP BY ALL ORDER BY s.step
"""
STRATEGIES = """
SELECT strategy, count(*) AS generated, sum(valid::INT) AS valid, sum(targets_mode::INT) AS targets,
       sum((added_step IS NOT NULL)::INT) AS admitted
FROM fg_synth WHERE run_id = $run GROUP BY strategy ORDER BY strategy
"""


@dataclass(frozen=True)
class ForgeSeries:
    steps: list[dict]
    """Per step: best validation, steps since it improved, synthesised?, batch score, synthetic share."""
    strategies: list[dict]
    """Per strategy: generated, valid, targeting the mode, admitted."""


def forge_build(con, run_id: str) -> tuple[ForgeSeries, str | None]:
    steps = fetch(con, STEPS, run=run_id)
    return ForgeSeries(steps, fetch(con, STRATEGIES, run=run_id)), None if steps else "no step recorded yet"


def forge_figure(series: ForgeSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    xs = [s["step"] for s in series.steps]
    ax.step(xs, [100 * s["best_val"] for s in series.steps], where="post", color="#1f77b4",
            label="best validation (prompt in force)")
    ax.plot(xs, [100 * (s["batch"] or 0) for s in series.steps], "o", color="#7f7f7f", label="its batch score")
    for s in series.steps:
        if s["synthesized"]:
            ax.axvline(s["step"], color="#d62728", alpha=0.3)
    ax.set_ylim(0, 100)
    ax.set_xticks(xs)
    ax.set_xlabel("step (red: stagnation opened the data gate)")
    ax.set_ylabel("success, %")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("prompt gate: validation only rises", fontsize=10)
    right = figure.add_subplot(1, 2, 2)
    names = [r["strategy"] for r in series.strategies]
    right.bar(range(len(names)), [r["generated"] for r in series.strategies], color="#c7c7c7", label="generated")
    right.bar(range(len(names)), [r["admitted"] for r in series.strategies], color="#2ca02c", label="admitted")
    right.set_xticks(range(len(names)), names, fontsize=8)
    right.set_ylabel("instances")
    right.legend(fontsize=8)
    right.set_title("data gate: verified synthesis per strategy", fontsize=10)
    return figure


def forge_caption(series: ForgeSeries) -> str:
    opened = sum(bool(s["synthesized"]) for s in series.steps)
    generated = sum(r["generated"] for r in series.strategies)
    admitted = sum(r["admitted"] for r in series.strategies)
    best = series.steps[-1]["best_val"] if series.steps else 0.0
    times = "time" if opened == 1 else "times"
    return (f"{len(series.steps)} steps; best validation {100 * best:.0f}%. The data gate opened {opened} {times} on "
            f"stagnation; the verifier admitted {admitted} of {generated} synthesised instances (the oracle solves "
            f"them and the prompt in force shows their failure mode, or not, for counter-examples). Synthetic "
            f"instances join only the training set.")
