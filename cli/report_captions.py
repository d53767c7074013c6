"""The caption under each report: what the panels show, in words, with the run's counts."""

from __future__ import annotations

from typing import Any

from cli.report_series import HarnessSeries, NodeSeries, SearchSeries, TrainingSeries

HOLDOUT_NOTES = {"circle_packing": " (circle_packing: select n=26, holdout n=32, so the two differ in scale)"}


def caption(family: str, series, run: dict[str, Any]) -> str:
    if family == "nodes":
        return nodes_caption(series)
    if family == "harness":
        return harness_caption(series)
    if family == "training":
        return training_caption(series)
    return search_caption(series, run["suite"])


def search_caption(series: SearchSeries, suite: str) -> str:
    counts = series.outcome_counts()
    accepted = sum(p.decision == "accept" for p in series.points)
    return (
        f"Left: each dot is one candidate's mean score over the select cases, in the round it was proposed "
        f"(dots of one round are spread sideways); red dots are the {accepted} candidates the gate admitted, the "
        f"red line is the champion (best admitted so far), the green dotted line the published reference where the "
        f"suite has one. The {counts['timeout']} timed-out, {counts['crashed']} crashed and {counts['invalid']} "
        f"invalid-output candidates have no score: they are counted in the strip below instead of being drawn as 0. "
        f"Right: each registered champion version's select score (what the gate saw) and holdout score (cases the "
        f"gate never sees){HOLDOUT_NOTES.get(suite, '')}."
    )


def harness_caption(series: HarnessSeries) -> str:
    totals: dict[str, int] = {}
    for d in series.decisions:
        totals[d["decision"]] = totals.get(d["decision"], 0) + 1
    counted = ", ".join(f"{n} {decision}" for decision, n in sorted(totals.items()))
    return (
        "Top: each gated edit's score on the cases its gate weighed (a paired replay, a validation or a discovery "
        "batch, depending on the gate; the seed harness is admitted at round 0), marked by the decision; the grey "
        "tick is the champion on the same cases, the faint red line the champion's registered select score. "
        f"Bottom left: gate decisions per round ({counted}). Bottom right: each champion version's select score "
        "(as registered from the gate's evidence) and holdout score (cases no gate sees)."
    )


def training_caption(series: TrainingSeries) -> str:
    extra = f"; dashed: {', '.join(n.replace('_', ' ') for n in series.extra_losses)}" if series.extra_losses else ""
    warm = f"{series.warm_start:.3f}" if series.warm_start is not None else "not recorded"
    holdout = series.final.holdout if series.final is not None else None
    registered = (f"the star is the registered policy's holdout accuracy ({holdout:.3f}), measured once at the end"
                  if holdout is not None else "no policy has been registered yet")
    return (
        f"Left: the loss each optimizer step minimised (its scale depends on the method{extra}). Right: greedy "
        f"exact-match accuracy of each evaluated checkpoint on the select cases, by the optimizer steps it had "
        f"taken; the dashed line is the supervised warm start's select accuracy ({warm}), the light blue line the "
        f"training batch at each step, and {registered}."
    )


def nodes_caption(series: NodeSeries) -> str:
    accepted = sum(bool(n["accepted"]) for n in series.nodes)
    return (
        f"Left: per AIDE² node (one evolve agent), the hidden composite (mean normalised holdout score of its inner "
        f"evolve champions over the inner suites; the gate decides on it) and the public composite (the same mean "
        f"over the select scores the inner agent saw); filled = accepted ({accepted} of {len(series.nodes)}: beat the "
        f"best so far), hollow = rejected; the red line is the best so far. Right: the registered agent champions' "
        f"public (select) vs hidden (holdout) composite."
    )
