"""The paired_rollouts loop end to end on the real engine and store: a tiny warm-started
student, four noisy GRPO steps in two chunks with gradient probes, evaluation,
registration with holdout, SQL over the metrics, an idempotent rerun, and the
independent arm (same store, so the same warm start) seeing the same batch and the
same both-pairing probe at step 0."""

import pytest
import torch
from pydantic import ValidationError

from flows import LOOPS, PROGRESS
from flows.paired_rollouts import paired_rollouts, progress_total
from schemas.configs import RunConfig
from schemas.loops import LOOP_SPECS
from schemas.post_training import GRPOConfig, PairedRolloutsConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TABLES = ("candidates", "cases", "executions", "scores", "registry", "train_steps")
PROBE = ("probe_cov_shared", "probe_cov_independent", "probe_cos_shared", "probe_cos_independent", "probe_true_norm")


def small_config(pairing: str = "shared", budget: int = 4) -> RunConfig:
    grpo = GRPOConfig(categories=("sort",), pretrain_steps=90, prompts_per_step=4, group_size=4, eval_every=2,
                      lr=1e-4, temperature=0.6)
    noise = PairedRolloutsConfig(noise_pairing=pairing, noise_kind="tool_failure", noise_rate=0.3, probe_every=2,
                                 probe_schedules=2)
    return RunConfig(loop="paired_rollouts", suite="arith", budget=budget, seed=3, tracking=False, grpo=grpo,
                     paired_rollouts=noise)


def test_config_errors_name_the_fix():
    with pytest.raises(ValidationError, match="grpo.reward='outcome'"):
        RunConfig(loop="paired_rollouts", suite="arith", budget=1, grpo=GRPOConfig(reward="shaped"))
    with pytest.raises(ValidationError, match="probe_schedules"):
        PairedRolloutsConfig(probe_schedules=1)
    assert progress_total(small_config()) == 4
    assert LOOPS["paired_rollouts"] is paired_rollouts and PROGRESS["paired_rollouts"](small_config()) == 4
    assert LOOP_SPECS["paired_rollouts"].default_suite == "arith"


def counts(store) -> dict[str, int]:
    return {t: len(store.read_rows(t)) for t in TABLES}


def test_paired_rollouts_trains_probes_registers_and_reruns(prefect_server, tmp_path):
    torch.set_num_threads(1)
    uri = str(tmp_path / "a")
    summary = paired_rollouts(config=small_config(), store_uri=uri, run_id="paired-a")
    store = open_store(uri)
    steps = sorted(store.read_rows("train_steps", "paired-a"), key=lambda r: r.step)
    assert [s.step for s in steps] == [0, 1, 2, 3] and all(s.samples == 16 for s in steps)
    for s in steps:
        m = s.metrics
        assert 0.0 <= m["reward_obs_mean"] <= m["reward_true_mean"] == m["accuracy"] <= 1.0
        assert 0.0 <= m["noise_hit_frac"] <= 1.0
        assert set(PROBE) <= set(m) if s.step % 2 == 0 else not set(PROBE) & set(m)
    probed = [s.metrics for s in steps if s.step % 2 == 0]
    assert all(m["probe_cov_shared"] >= 0.0 and m["probe_cov_independent"] >= 0.0 for m in probed)
    assert any(m["probe_true_norm"] > 0.0 for m in probed)  # some groups carry a contrast

    registry = {r.stage: r for r in store.read_rows("registry")}
    final = registry["stable"]
    assert final.name == "arith/paired_rollouts" and final.alias == "champion"
    assert summary["candidate_id"] == final.candidate_id
    assert 0.0 <= final.select_score <= 1.0 and 0.0 <= final.holdout_score <= 1.0
    assert registry["experimental"].holdout_score is None
    assert {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"} == {final.candidate_id}
    chunks = {c.round: c for c in store.read_rows("candidates", "paired-a")}
    assert sorted(chunks) == [0, 1, 2] and chunks[2].parent_ids == [chunks[1].candidate_id]
    assert chunks[1].operator == "paired-shared"

    query = ("SELECT step, metrics['probe_cov_shared'] AS shared, metrics['reward_obs_mean'] AS obs FROM train_steps "
             "WHERE run_id = 'paired-a' AND metrics['probe_cov_shared'] IS NOT NULL ORDER BY step")
    rows = sql(store, query).to_pylist()
    assert [r["step"] for r in rows] == [0, 2] and rows[0]["shared"] == pytest.approx(probed[0]["probe_cov_shared"])

    before = counts(store)
    again = paired_rollouts(config=small_config(), store_uri=uri, run_id="paired-a")
    assert counts(store) == before and again["candidate_id"] == summary["candidate_id"]

    paired_rollouts(config=small_config("independent", budget=2), store_uri=uri, run_id="paired-b")  # same warm start
    first = min(store.read_rows("train_steps", "paired-b"), key=lambda r: r.step).metrics
    for key in ("reward_true_mean", *PROBE):  # same weights, same rollouts, same probe draws
        assert first[key] == pytest.approx(steps[0].metrics[key], rel=1e-5, abs=1e-9)
    print(f"\npaired: select {summary['init_select_score']:.3f} -> {summary['select_score']:.3f}, probe cov "
          f"shared {probed[0]['probe_cov_shared']:.4f} vs independent {probed[0]['probe_cov_independent']:.4f}")
