"""`ratchet report RUN_ID`: one PNG of a run's progress, drawn for the run's loop family
(`schemas.loops`, decided by the run's `loop` column):

- program search (evolve): every candidate's select score by round with the champion's
  staircase and the suite's published reference where one exists; candidates that timed
  out, crashed or returned an invalid output are counted in a strip of their own (never
  drawn as a score of 0); champions' select vs holdout score by version.
- rsi_anything: the WM's predicted vs actual gain per version and each pair check
  (`cli.report_rsi`).
- aide2: the node tree's hidden vs public composite per node and the best so far.
- harness loops: each gated edit's success on the gate's cases next to the champion's,
  per round; accepted vs rejected edits per round; champions' select vs holdout.
- measurement protocols: the paired difference of each count with its CI, the arms per
  template, cost per solved task with its missing-usage range (`cli.report_protocol`).
- loops with a picture of their own (`OWN_PICTURES`: dream_rsi, research_world_models,
  graphskillevo, trace, cover, codemidas, dense, skilllift, ...): `cli/report_<picture>.py`.
- training loops: loss per optimizer step; select accuracy per evaluated checkpoint with
  the warm start as a horizontal line and the registered policy's holdout accuracy.

`report_series(store_uri, run_id)` returns the data a picture is drawn from (tested
against SQL); `write_report` draws and saves it. Queries bind the run id as a parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from cli import report_data as data
from cli import report_series as series_of
from storage.catalog import connect
from storage.store import open_store

HINT = "list runs with `ratchet runs`"

OWN_PICTURES: dict[str, tuple[str, str]] = {
    "dream_rsi": ("dream", "replay cost"),
    "research_world_models": ("rwm", "Regret@k"),
    "rsi_anything": ("rsi", "pick gain"),
    "graphskillevo": ("gse", "validation success"),
    "trace": ("trace", "Δreward"),
    "cover": ("cover", "mutant-kill AUC"),
    "codemidas": ("codemidas", "mutation score"),
    "dense": ("dense", "strict pass"),
    "skilllift": ("skilllift", "real success"),
    "arenaflow": ("arenaflow", "success"),
    "rsiagent": ("rsiagent", "target success"),
    "moscopt": ("moscopt", "validation success"),
    "prior_or_feedback": ("prior_or_feedback", "feedback sensitivity"),
    "gai": ("gai", "internal − external gap"),
    "mace": ("mace", "test success"),
    "forge": ("forge", "best validation"),
    "modular_rsi": ("modular_rsi", "benchmark success"),
    "mass": ("mass", "holdout success"),
    "limbo": ("limbo", "stream accuracy"),
    "rpmem": ("rpmem", "holdout recall"),
    "algoevo": ("algoevo", "best-so-far gain"),
}
"""Loops drawn by a module of their own: loop -> (picture, metric). Picture ``X`` is
``cli/report_X.py`` with ``X_build(con, run_id) -> (series, why empty)``,
``X_figure(series)`` and ``X_caption(series)``."""


def picture_module(picture: str):
    import importlib

    return importlib.import_module(f"cli.report_{picture}")


class NothingToPlot(SystemExit):
    """The run exists but has no rows its picture is drawn from (yet)."""


def published_reference(suite: str) -> Optional[tuple[str, float]]:
    """The suite's published best (label, value), as the demo quotes it, where one exists."""
    from cli.demo import PUBLISHED

    return PUBLISHED.get(suite)


def family_of(loop: str, has_nodes: bool, has_steps: bool) -> str:
    """search | nodes | harness | training | protocol: the run loop's family (aide2's node tree is
    drawn on its own); a loop this version does not know is judged by its rows."""
    from schemas.loops import LOOP_SPECS

    spec = LOOP_SPECS.get(loop)
    family = spec.family if spec else None
    if has_nodes and family in ("search", None):
        return "nodes"
    return family or ("training" if has_steps else "search")


def report_series(store_uri: str, run_id: str) -> dict[str, Any]:
    """The run (its runs_current row), its family, metric and series; SystemExit with one
    line when the run is unknown or has nothing to plot yet."""
    con = connect(open_store(store_uri))
    try:
        run = data.run_row(con, run_id)
        if run is None:
            raise SystemExit(f"no run {run_id!r} in the store; {HINT}")
        family = family_of(run["loop"], data.has_rows(con, "nodes", run_id), data.has_rows(con, "train_steps", run_id))
        if family == "nodes":
            metric, built = "composite", series_of.node_series(data.node_rows(con, run_id))
            empty = None if built.nodes else "no AIDE² node has been gated"
        elif run["loop"] in OWN_PICTURES:
            family, metric = OWN_PICTURES[run["loop"]]
            built, empty = getattr(picture_module(family), f"{family}_build")(con, run_id)
        elif family == "protocol":
            from cli.report_protocol import protocol_build

            metric, (built, empty) = "protocol", protocol_build(con, run["loop"], run_id)
        else:
            metric = data.primary_metric(con, run_id, run["suite"]) or "score"
            built, empty = build(con, family, run_id, metric)
    finally:
        con.close()
    if empty:
        raise NothingToPlot(nothing_line(run, empty))
    return {"run": run, "family": family, "metric": metric, "series": built}


def build(con, family: str, run_id: str, metric: str):
    """(series, None) or (series, why there is nothing to plot)."""
    if family == "harness":
        built = series_of.harness_series(data.harness_rows(con, run_id))
        return built, None if built.decisions else "no gate decision recorded"
    if family == "training":
        built = series_of.training_series(data.training_rows(con, run_id, metric))
        return built, None if built.loss or built.select else "no optimizer step or evaluation recorded"
    built = series_of.search_series(data.search_rows(con, run_id, metric))
    return built, None if built.points else "no candidate has been executed on the select cases"


def nothing_line(run: dict[str, Any], why: str) -> str:
    status = run["status"]
    then = (f"finish it with `ratchet resume {run['run_id']}`" if status in ("failed", "running")
            else f"inspect it with `ratchet show {run['run_id']}`")
    error = f" (error: {run['error'].splitlines()[0][:120]})" if status == "failed" and run.get("error") else ""
    return f"nothing to plot for run {run['run_id']!r} ({run['loop']}, {status}){error}: {why} yet; {then}"


def draw(report: dict[str, Any]):
    """(figure, caption) of a report_series result."""
    from cli.report_captions import caption
    from cli.report_draw import nodes_figure, search_figure
    from cli.report_draw_loops import harness_figure, training_figure

    family, built, metric, run = report["family"], report["series"], report["metric"], report["run"]
    if family == "protocol":
        from cli.report_protocol import protocol_caption, protocol_figure

        return protocol_figure(built), protocol_caption(built)
    if family in {f for f, _ in OWN_PICTURES.values()}:
        module = picture_module(family)
        return getattr(module, f"{family}_figure")(built), getattr(module, f"{family}_caption")(built)
    if family == "nodes":
        figure = nodes_figure(built)
    elif family == "harness":
        figure = harness_figure(built, metric)
    elif family == "training":
        figure = training_figure(built, metric)
    else:
        figure = search_figure(built, metric, published_reference(run["suite"]))
    return figure, caption(family, built, run)


def lineage_caption(store_uri: str, run_id: str) -> str:
    """The runs this one continues (`--start-from champion`), oldest first, with each
    run's final champion: how far the ratchet has turned across runs."""
    from cli.views import lineage

    chain = lineage(open_store(store_uri), run_id)
    if len(chain) < 2:
        return ""
    steps = [f"{c['run']} (champion {c['champion']}, select {c['select_score']:.6g})" if c["champion"]
             else f"{c['run']} (no champion yet)" for c in chain]
    return f" Lineage across runs, each started from the previous one's champion: {' -> '.join(steps)}."


def default_path(store_uri: str, run_id: str) -> Path:
    store = open_store(store_uri)
    return Path(store_uri) / "reports" / f"{run_id}.png" if store.is_local else Path(f"{run_id}.png")


def write_report(store_uri: str, run_id: str, out: Path | None) -> Path:
    """Draw the run's report and save it at `out` (default <store>/reports/RUN_ID.png for
    a local store, ./RUN_ID.png for S3); returns the path."""
    from cli.report_draw import finish

    report = report_series(store_uri, run_id)
    figure, caption = draw(report)
    caption += lineage_caption(store_uri, run_id)
    run = report["run"]
    title = f"{run['run_id']}: {run['loop']} on {run['suite']} ({run['status']})"
    return finish(figure, title, caption, out or default_path(store_uri, run_id))
