"""Each remaining loop's `proposer: llm` path, two rounds end to end against the real
served 0.5B model: aide2's inner evolve (two outer nodes, each running evolve on both
suites) and the harness loops growing_harness, medrsi and designer_rsi. What the model
answers is whatever it answers; each test checks the recorded rows: every llm-written
candidate carries its call's cost and raw answer, an unusable answer is an
`llm_unusable` candidate that is never executed, and the run finishes."""

import json

import pytest

from schemas.admission import MedRSIConfig
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.integration]


def test_aide2_inner_evolve_two_nodes(prefect_server, served, recorded, tmp_path):
    from flows.aide2 import aide2

    config = RunConfig(loop="aide2", suite="circle_packing+bin_packing", budget=2, inner_budget=1, seed=0, workers=1,
                       tracking=False, proposer="llm", evolve=EvolveConfig(islands=1, llm_max_tokens=recorded.max_tokens))
    aide2(config=config, store_uri=str(tmp_path), run_id="llm-aide2")
    store = open_store(str(tmp_path))
    assert sorted(n.round for n in store.read_rows("nodes", "llm-aide2")) == [0, 1]
    for node in ("n000", "n001"):
        for suite in ("circle_packing", "bin_packing"):
            run_id = f"llm-aide2.{node}.{suite}"
            written = recorded.llm_rows(store, run_id)
            assert [c.round for c in written] == [1] and recorded.finished(store, run_id)
    assert recorded.finished(store, "llm-aide2")


def harness_run(loop: str, recorded, **sections) -> RunConfig:
    return RunConfig(loop=loop, suite="toolsim", budget=2, seed=0, workers=1, tracking=False, proposer="llm",
                     evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens), **sections)


def test_growing_harness_two_steps(prefect_server, served, recorded, tmp_path):
    from flows.growing_harness import growing_harness

    config = harness_run("growing_harness", recorded, suite_params={"instances_per_template": 10, "seed": 1},
                         grow={"window_size": 8, "gate_every": 1})
    growing_harness(config=config, store_uri=str(tmp_path), run_id="llm-grow")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-grow")
    assert [c.round for c in written] == [1, 2]  # a step whose answer gave no patch is recorded; the next one asks again
    assert all(c.operator in ("llm_unusable", "llm_patch") for c in written)
    assert recorded.finished(store, "llm-grow")


def test_medrsi_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.medrsi import medrsi

    config = harness_run("medrsi", recorded, suite_params={"instances_per_template": 5},
                         medrsi=MedRSIConfig(trial_batches=1, batch_size=4))
    medrsi(config=config, store_uri=str(tmp_path), run_id="llm-medrsi")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-medrsi")
    assert [c.round for c in written] == [1, 2]
    assert all(c.operator in ("llm_unusable", "llm_tool") for c in written)
    assert recorded.finished(store, "llm-medrsi")


def test_designer_rsi_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.designer_rsi import designer_rsi

    config = harness_run("designer_rsi", recorded, suite_params={"instances_per_template": 16},
                         designer={"traffic_batch": 12, "replay_targets": 4, "replay_successes": 3,
                                   "gap_threshold": 1, "revise_threshold": 1})
    designer_rsi(config=config, store_uri=str(tmp_path), run_id="llm-designer")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-designer")
    assert [c.round for c in written] == [1, 2]
    assert all(c.operator in ("llm_unusable", "llm_expand", "llm_deepen") for c in written)
    assert recorded.finished(store, "llm-designer")


def test_cover_llm_inputs_join_the_test_policy(prefect_server, served, recorded, tmp_path):
    """cover's llm path: the endpoint writes one input pool per problem, recorded with its
    raw answer and cost; the test policy gets one more action, ``llm``, and a problem
    whose answer held no usable input never draws it."""
    from flows.cover import cover
    from schemas.loops import CoverRun

    config = CoverRun(suite="codemidas", budget=2, seed=0, workers=1, tracking=False, proposer="llm",
                      evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens),
                      cover={"problems": 2, "programs": 4, "tests": 8, "pool_size": 4, "eval_seeds": 1})
    cover(config=config, store_uri=str(tmp_path), run_id="llm-cover")
    store = open_store(str(tmp_path))
    rows = {r.kind: [] for r in store.read_rows("distillates", "llm-cover")}
    for r in store.read_rows("distillates", "llm-cover"):
        rows[r.kind].append(json.loads(r.content))
    written = rows["cover_llm_inputs"]
    assert len(written) == 2
    for w in written:
        assert w["tokens_in"] > 50 and 0 < w["tokens_out"] <= recorded.max_tokens
        assert (w["why_none"] is None) == bool(w["inputs"]) and len(w["inputs"]) <= 4
    raw = [r.uri for r in store.read_rows("distillates", "llm-cover") if r.kind == "cover_llm_inputs"]
    assert all(store.get_blob(u.rsplit("/", 1)[-1]) for u in raw)
    assert {tuple(p["actions"]) for p in rows["cover_policy"] if p["role"] == "test"} == {
        ("fuzz", "edge", "small", "large", "llm")}
    empty = {w["prob_id"] for w in written if not w["inputs"]}
    assert not any(t["generator"] == "llm" and t["prob_id"] in empty for t in rows["cover_test"])
    assert recorded.finished(store, "llm-cover")
