"""The harness_bandit loop end to end on the real engine and store: a tiny student
warm-started on three harnesses, six scheduled GRPO steps in two chunks, the scheduler's
choices and signals in train_steps, registration with holdout, an idempotent rerun,
and a round-robin run that visits the harnesses in order."""

import pytest
import torch
from pydantic import ValidationError

from flows import LOOPS, PROGRESS
from flows.harness_bandit import harness_bandit, progress_total, with_harness_categories
from schemas.configs import RunConfig
from schemas.loops import LOOP_SPECS
from schemas.post_training import GRPOConfig, HarnessBanditConfig
from storage.catalog import sql
from storage.store import open_store
from suites.arith.lm import from_bytes

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TABLES = ("candidates", "cases", "executions", "scores", "registry", "train_steps")
HARNESSES = ("sort", "rev", "dsum")
SIGNALS = ("harness", "learn_raw", "transfer_raw", "learn_n", "transfer_n", "fused", "bonus",
           "prob_sort", "prob_rev", "prob_dsum")


def small_config(scheduler: str = "bandit", budget: int = 6) -> RunConfig:
    grpo = GRPOConfig(pretrain_steps=150, prompts_per_step=3, group_size=4, eval_every=3, lr=1e-4, temperature=0.6)
    hb = HarnessBanditConfig(harnesses=HARNESSES, scheduler=scheduler, window=4, sketch_dim=8)
    return RunConfig(loop="harness_bandit", suite="arith", budget=budget, seed=2, tracking=False, grpo=grpo,
                     harness_bandit=hb)


def test_config_errors_and_harness_categories():
    with pytest.raises(ValidationError, match="at least 2 distinct"):
        HarnessBanditConfig(harnesses=("add", "add"))
    assert with_harness_categories(small_config()).grpo.categories == HARNESSES
    assert progress_total(small_config()) == 6
    assert LOOPS["harness_bandit"] is harness_bandit and PROGRESS["harness_bandit"](small_config()) == 6
    assert LOOP_SPECS["harness_bandit"].default_suite == "arith"


def counts(store) -> dict[str, int]:
    return {t: len(store.read_rows(t)) for t in TABLES}


def test_harness_bandit_schedules_trains_registers_and_reruns(prefect_server, tmp_path):
    torch.set_num_threads(1)
    uri = str(tmp_path / "a")
    summary = harness_bandit(config=small_config(), store_uri=uri, run_id="hb-a")
    store = open_store(uri)
    steps = sorted(store.read_rows("train_steps", "hb-a"), key=lambda r: r.step)
    assert [s.step for s in steps] == list(range(6)) and all(s.samples == 12 for s in steps)
    for s in steps:
        m = s.metrics
        assert set(SIGNALS) <= set(m) and m["harness"] in (0.0, 1.0, 2.0)
        assert sum(m[f"prob_{h}"] for h in HARNESSES) == pytest.approx(1.0)
        assert min(m[f"prob_{h}"] for h in HARNESSES) >= 0.1 / 3 - 1e-12  # the exploration floor
        assert 0.0 <= m["learn_n"] <= 1.0 and 0.0 <= m["fused"] <= 1.0 and m["learn_raw"] >= 0.0
    assert steps[0].metrics["bonus"] == 0.0  # ln(1) = 0
    assert any(s.metrics["learn_raw"] > 0.0 for s in steps)  # some groups carry a contrast

    final_meta = from_bytes(store.get_blob(summary["candidate_id"]))[1]
    picks = [int(s.metrics["harness"]) for s in steps]
    assert final_meta["scheduler"]["visits"] == [picks.count(h) for h in range(3)]

    cases = {c.payload_json for c in store.read_rows("cases")}
    assert {h for h in HARNESSES if any(f'"category": "{h}"' in p for p in cases)} == set(HARNESSES)
    registry = {r.stage: r for r in store.read_rows("registry")}
    final = registry["stable"]
    assert final.name == "arith/harness_bandit" and final.alias == "champion" and 0.0 <= final.holdout_score <= 1.0
    assert {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"} == {final.candidate_id}

    query = ("SELECT metrics['harness'] AS harness, count(*) AS n FROM train_steps WHERE run_id = 'hb-a' "
             "GROUP BY 1 ORDER BY 1")
    assert {int(r["harness"]): r["n"] for r in sql(store, query).to_pylist()} == {
        h: picks.count(h) for h in range(3) if picks.count(h)}

    before = counts(store)
    again = harness_bandit(config=small_config(), store_uri=uri, run_id="hb-a")
    assert counts(store) == before and again["candidate_id"] == summary["candidate_id"]

    harness_bandit(config=small_config("round_robin", budget=3), store_uri=uri, run_id="hb-b")  # same warm start
    robin_steps = sorted(store.read_rows("train_steps", "hb-b"), key=lambda r: r.step)
    assert [s.metrics["harness"] for s in robin_steps] == [0.0, 1.0, 2.0]
    print(f"\nharness_bandit: picks {picks}, "
          f"select {summary['init_select_score']:.3f} -> {summary['select_score']:.3f}")
