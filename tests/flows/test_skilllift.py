"""The skilllift loop end to end on the real engine, store, sandbox and toolsim at a tiny
budget: the spec's tables answer in SQL, the inner loop made no real run, each gate
decision is recomputed from the scores table, the rank correlation from the recorded
real and rubric scores, and re-running the same run id adds nothing."""

import json
from statistics import fmean

import pytest

from flows.skilllift import skilllift
from schemas.configs import RunConfig
from schemas.skilllift import SkillLiftConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.gate.stats import kendall

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions", "registry")


def small_config() -> RunConfig:
    return RunConfig(loop="skilllift", suite="toolsim", budget=2, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5},
                     skilllift=SkillLiftConfig(inner_iterations=4, proposals=3, top_k=2))


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("skilllift")
    summary = skilllift(config=small_config(), store_uri=str(root), run_id="skilllift-a")
    store = open_store(str(root))
    before = counts(store)
    again = skilllift(config=small_config(), store_uri=str(root), run_id="skilllift-a")
    return str(root), store, summary, before, again


def kind(store, name: str) -> list[dict]:
    rows = sql(store, f"SELECT content FROM distillates WHERE kind = '{name}' ORDER BY round, distillate_id")
    return [json.loads(r["content"]) for r in rows.to_pylist()]


def test_rerunning_the_same_run_adds_nothing(run):
    _, store, summary, before, again = run
    assert counts(store) == before and again == summary


def test_only_the_outer_loop_runs_skills_for_real(run):
    root, store, summary, _, _ = run
    skills, real_runs = kind(store, "skilllift_skills"), kind(store, "skilllift_real_runs")
    executed = {s["id"] for s in skills if s["executed"]}
    assert len(skills) > len(executed)  # the inner loop scored more skills than ran
    assert {r["skill_id"] for r in real_runs} == executed
    assert executed <= {e.candidate_id for e in store.read_rows("executions")}
    inner_cost = [c for c in kind(store, "skilllift_cost") if c["phase"] == "inner"]
    assert inner_cost and all(c["oracle_tokens"] == 0 and c["real_episodes"] == 0 for c in inner_cost)
    assert summary["real_episodes"] == len(real_runs)


def test_each_decision_is_the_best_real_skill_against_the_champion(run):
    root, store, _, _, _ = run
    scores = [s for s in store.read_rows("scores") if s.metric == "success" and s.split == "select"]
    for d in store.read_rows("gate_decisions"):
        if d.gate != "real_champion":
            continue
        evidence = json.loads(d.evidence_json)
        means = {c: fmean(s.value for s in scores if s.candidate_id == c) for c in evidence["real_mean"]}
        assert evidence["real_mean"] == pytest.approx(means)
        assert d.baseline_id == evidence["old_champion"] and d.select_score == pytest.approx(max(means.values()))
        assert d.decision == ("accept" if d.candidate_id != d.baseline_id and d.delta > 0 else "reject")
        (cal,) = [c for c in kind(store, "skilllift_calibration") if c["round"] == d.round]
        ids = sorted(evidence["real_mean"])
        expected = kendall([means[i] for i in ids], [evidence["rubric_score"][i] for i in ids])
        assert cal["rank_corr"] == (None if expected != expected else pytest.approx(expected))
        assert cal["n_cands"] == len(ids)


def test_rubrics_are_versioned_per_round_and_champions_registered_with_holdout(run):
    root, store, summary, _, _ = run
    rubrics = kind(store, "skilllift_rubrics")
    assert [r["ver"] for r in rubrics] == [0, 1, 2]
    assert all(json.loads(r["items_json"]) for r in rubrics)
    registry = store.read_rows("registry")
    assert registry and all(0.0 <= r.holdout_score <= 1.0 for r in registry)
    assert summary["candidate_id"] == max(registry, key=lambda r: r.version).candidate_id
    answer = sql(store, "SELECT json_extract_string(content, '$.phase') AS phase, "
                        "sum(CAST(json_extract(content, '$.real_episodes') AS INT)) AS n FROM distillates "
                        "WHERE kind = 'skilllift_cost' GROUP BY phase ORDER BY phase").to_pylist()
    assert [a["phase"] for a in answer] == ["inner", "outer"] and answer[0]["n"] == 0


def test_the_report_draws_agreement_and_real_success(run, tmp_path):
    from PIL import Image

    from cli.report import write_report

    root = run[0]
    path = write_report(root, "skilllift-a", tmp_path / "skilllift.png")
    assert Image.open(path).size[0] > 1000
