"""graphskillevo's picture: each generation's population on validation (every member a
dot, the best joined by a line: it never goes down, since old members compete with
the new), and each generation's offspring by outcome (entered the population, valid but
not kept, invalid and never run), with the champion's test success against the seed's.

`gse_build` reads (SQL); `gse_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from cli.report_data import fetch, last_registered

POPULATION = "SELECT gen, skill_id, rank, val_success FROM gse_population WHERE run_id = $run ORDER BY gen, rank"
OFFSPRING = ("SELECT s.gen, s.valid, s.reason, coalesce(g.decision, 'none') AS decision FROM gse_skills s "
             "LEFT JOIN gate_decisions g ON g.run_id = s.run_id AND g.gate = 'gse_select' "
             "AND json_extract_string(g.evidence_json, '$.skill_id') = s.skill_id "
             "WHERE s.run_id = $run AND s.gen > 0 ORDER BY s.gen")
TEST = "SELECT role, avg(success::INT) AS success, count(*) AS n FROM gse_test WHERE run_id = $run GROUP BY role"
OUTCOMES = (("kept", "#2ca02c"), ("not kept", "#ff7f0e"), ("invalid", "#d62728"))


@dataclass(frozen=True)
class GSESeries:
    population: list[dict[str, Any]]
    offspring: list[dict[str, Any]]
    test: dict[str, float]
    champion: dict[str, Any] | None


def outcome(row: dict[str, Any]) -> str:
    if not row["valid"]:
        return "invalid"
    return "kept" if row["decision"] == "accept" else "not kept"


def gse_build(con, run_id: str) -> tuple[GSESeries, str | None]:
    population = fetch(con, POPULATION, run=run_id)
    offspring = fetch(con, OFFSPRING, run=run_id)
    test = {r["role"]: r["success"] for r in fetch(con, TEST, run=run_id)}
    champion = last_registered(con, run_id)
    return GSESeries(population, offspring, test, champion), None if population else "no generation has been gated"


def gse_figure(series: GSESeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(13, 5)
    left, right = figure.subplots(1, 2)
    gens = sorted({r["gen"] for r in series.population})
    left.scatter([r["gen"] for r in series.population], [r["val_success"] for r in series.population],
                 color="#1f77b4", alpha=0.6, label="population member")
    left.plot(gens, [max(r["val_success"] for r in series.population if r["gen"] == g) for g in gens],
              color="#1f77b4", marker="o", label="best on validation")
    left.set_xticks(gens)
    left.set_title("population on the validation split, per generation", fontsize=10)
    left.set_xlabel("generation (0: the seed skill)")
    left.set_ylabel("validation success")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    born = sorted({r["gen"] for r in series.offspring}) or [1]
    bottom = [0] * len(born)
    for name, color in OUTCOMES:
        counts = [sum(outcome(r) == name and r["gen"] == g for r in series.offspring) for g in born]
        right.bar(born, counts, bottom=bottom, color=color, label=name)
        bottom = [b + c for b, c in zip(bottom, counts)]
    right.set_xticks(born)
    right.set_title("offspring per generation by gate outcome", fontsize=10)
    right.set_xlabel("generation")
    right.set_ylabel("offspring")
    right.legend(fontsize=8)
    right.grid(alpha=0.3, axis="y")
    return figure


def gse_caption(series: GSESeries) -> str:
    invalid = [r for r in series.offspring if not r["valid"]]
    first = f" (first: {invalid[0]['reason'][:80]})" if invalid else ""
    champion = series.champion
    held = "" if champion is None else (f" Champion {champion['candidate_id'][:10]} (best on validation, "
                                        f"{champion['select_score']:.3f}; held-out {champion['holdout_score']:.3f}).")
    test = " ".join(f"Test success {role} {value:.3f}." for role, value in sorted(series.test.items()))
    return (f"{len(series.offspring)} offspring, {len(invalid)} invalid and never run{first}; the population keeps "
            f"the top skills of old and new on validation.{held} {test} The test split is for reporting only.")
