"""`ratchet report RUN_ID`: a picture of a run's progress — every candidate's select
score by round, the champion's staircase, and the champions' holdout scores."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from storage.catalog import sql  # noqa: E402
from storage.store import open_store  # noqa: E402
from suites import get_suite  # noqa: E402

CANDIDATES = """
SELECT c.round, c.candidate_id, avg(s.value) AS select_score, any_value(g.decision) AS decision
FROM candidates c
JOIN scores s ON s.run_id = c.run_id AND s.candidate_id = c.candidate_id
JOIN gate_decisions g ON g.run_id = c.run_id AND g.candidate_id = c.candidate_id
WHERE c.run_id = '{run}' AND s.split = 'select' AND s.metric = '{metric}'
GROUP BY c.round, c.candidate_id ORDER BY c.round
"""

CHAMPIONS = "SELECT version, select_score, holdout_score FROM registry WHERE run_id = '{run}' ORDER BY version"


def primary_metric(store, run_id: str) -> str:
    """The metric the run's gate maximised: its suite's primary metric."""
    rows = sql(store, f"SELECT suite FROM runs_current WHERE run_id = '{run_id}'").to_pylist()
    if not rows:
        raise SystemExit(f"no run {run_id!r} in the store; list runs with `ratchet runs`")
    return get_suite(rows[0]["suite"]).primary_metric


def write_report(store_uri: str, run_id: str, out: Path | None) -> Path:
    store = open_store(store_uri)
    metric = primary_metric(store, run_id)
    candidates = sql(store, CANDIDATES.format(run=run_id, metric=metric)).to_pylist()
    champions = sql(store, CHAMPIONS.format(run=run_id)).to_pylist()
    if not candidates:
        raise SystemExit(f"no scored candidates for run {run_id!r}; list runs with `ratchet runs`")
    figure, (search, holdout) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 1]})
    for decision, colour in (("reject", "#bbbbbb"), ("accept", "#d62728")):
        chosen = [c for c in candidates if c["decision"] == decision]
        search.scatter([c["round"] for c in chosen], [c["select_score"] for c in chosen], s=12, c=colour,
                       label=f"{decision}ed ({len(chosen)})")
    best, staircase = float("-inf"), []
    for c in candidates:
        if c["decision"] == "accept":
            best = max(best, c["select_score"])
        staircase.append((c["round"], best))
    search.step([r for r, _ in staircase], [b for _, b in staircase], where="post", c="#d62728", lw=1)
    search.set(xlabel="round", ylabel=f"select {metric}", title=f"{run_id}: candidates and champion")
    search.legend(loc="lower right")
    holdout.plot([c["version"] for c in champions], [c["select_score"] for c in champions], "o-", label="select")
    holdout.plot([c["version"] for c in champions], [c["holdout_score"] for c in champions], "s--", label="holdout")
    holdout.set(xlabel="champion version", ylabel=metric, title="champions: select vs holdout")
    holdout.legend()
    figure.tight_layout()
    path = out or (Path(store_uri) / "reports" / f"{run_id}.png" if store.is_local else Path(f"{run_id}.png"))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
