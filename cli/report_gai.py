"""gai's picture: the manifest of a store. Left, every audited flow's place on the two
switches (how many flows fall in each system × anchor class, the flagged ones apart);
right, each champion version's internal (select) against its external (holdout) score,
the diagonal meaning no gap: a version above it gained internally what the anchored
score did not see, and one labelled possible standard drift is marked.

`gai_build` reads (SQL); `gai_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch

CLASSES = ("SELECT flow_id, loop, system, anchor, heldout_reads, flagged, mean_gap FROM gai_classification "
           "WHERE run_id = $run ORDER BY flow_id")
VERSIONS = ("SELECT flow_id, ver, internal_score, external_score, gap, label FROM gai_versions "
            "WHERE run_id = $run AND internal_score IS NOT NULL AND external_score IS NOT NULL ORDER BY flow_id, ver")


@dataclass(frozen=True)
class GAISeries:
    flows: list[dict[str, Any]]
    versions: list[dict[str, Any]]

    def counts(self) -> dict[str, tuple[int, int]]:
        """class -> (flows, flagged flows)."""
        out: dict[str, tuple[int, int]] = {}
        for f in self.flows:
            key = f"{f['system']}/{f['anchor']}"
            n, flagged = out.get(key, (0, 0))
            out[key] = (n + 1, flagged + bool(f["flagged"]))
        return dict(sorted(out.items()))


def gai_build(con, run_id: str) -> tuple[GAISeries, str | None]:
    series = GAISeries(fetch(con, CLASSES, run=run_id), fetch(con, VERSIONS, run=run_id))
    return series, None if series.flows else "no flow audited (the store held no other run)"


def gai_figure(series: GAISeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 4.6)
    left, right = figure.subplots(1, 2)
    counts = series.counts()
    names = list(counts)
    left.barh(names, [counts[k][0] - counts[k][1] for k in names], color="#1f77b4", label="clean")
    left.barh(names, [counts[k][1] for k in names], left=[counts[k][0] - counts[k][1] for k in names],
              color="#d62728", label="flagged (off anchor or held-out read)")
    left.set_title("flows per class (improver in agent? / anchor)", fontsize=10)
    left.set_xlabel("flows")
    left.legend(fontsize=7)
    left.grid(alpha=0.3, axis="x")
    right.set_title("champion versions: internal vs external score", fontsize=10)
    drift = [v for v in series.versions if v["label"] == "possible standard drift"]
    rest = [v for v in series.versions if v["label"] != "possible standard drift"]
    right.scatter([v["external_score"] for v in rest], [v["internal_score"] for v in rest], alpha=0.7,
                  color="#1f77b4", label="version")
    right.scatter([v["external_score"] for v in drift], [v["internal_score"] for v in drift], alpha=0.9,
                  color="#d62728", marker="x", label="possible standard drift")
    values = [s for v in series.versions for s in (v["internal_score"], v["external_score"])] or [0.0, 1.0]
    low, high = min(values), max(values)
    right.plot([low, high], [low, high], color="#777777", linewidth=1, linestyle="--")
    right.set_xlabel("external (holdout, anchored)")
    right.set_ylabel("internal (select)")
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    return figure


def gai_caption(series: GAISeries) -> str:
    counts = series.counts()
    head = f"{len(series.flows)} flows audited: " + ", ".join(f"{k} {n}" for k, (n, _) in counts.items()) + "."
    leaks = [f["flow_id"] for f in series.flows if f["heldout_reads"]]
    drift = sum(v["label"] == "possible standard drift" for v in series.versions)
    return (head + f" Held-out split read by selection: {', '.join(leaks) if leaks else 'no flow'}."
            + f" {len(series.versions)} champion versions, {drift} labelled possible standard drift.")
