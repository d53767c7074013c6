"""STRIDE and CLOOPD as methods of the opd loop, end to end on the real engine and store
at a tiny budget: per-step metrics in train_steps, the method state (STRIDE's prefix
buffer, CLOOPD's TPMR counters) inside each chunk's checkpoint, and a crashed run that
resumes to exactly the uninterrupted one (the state restored from the checkpoint)."""

import math

import pytest
import torch

from flows.opd import opd
from schemas.configs import RunConfig
from schemas.post_training import CLOOPDMethodConfig, DistillRunConfig, STRIDEMethodConfig
from storage.store import open_store
from suites.arith.lm import from_bytes
from tasks.loops.opd.opd_methods import METHODS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def small_config(method: str, **overrides) -> RunConfig:
    cfg = DistillRunConfig(method=method, categories=("chain",), teacher_steps=5, pretrain_steps=5,
                           prompts_per_step=3, rollouts=1, max_new_tokens=24, eval_every=2, lr=1e-3, **overrides)
    return RunConfig(loop="opd", suite="arith", budget=4, seed=3, tracking=False, opd=cfg,
                     suite_params={"n_per_category": 12})


CONFIGS = {
    "stride": small_config("stride", stride=STRIDEMethodConfig(max_turn_tokens=6, stop_threshold=-6.0,
                                                               pass_threshold=-5.0)),
    "cloopd": small_config("cloopd", cloopd=CLOOPDMethodConfig(allocation="tpmr", tpmr_max_pass_kl=10.0)),
}


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """One store for every run here: the teacher is trained once and the warm starts are shared."""
    return str(tmp_path_factory.mktemp("opd-stride-cloopd"))


def steps_of(store, run_id: str):
    return sorted(store.read_rows("train_steps", run_id), key=lambda r: r.step)


def crash_then_resume(monkeypatch, method: str, uri: str, run_id: str) -> dict:
    real, failed = METHODS[method], []

    def crash_once(ctx, step):
        if step == 3 and not failed:
            failed.append(step)
            raise RuntimeError("simulated crash in chunk 1")
        return real(ctx, step)

    monkeypatch.setitem(METHODS, method, crash_once)
    with pytest.raises(RuntimeError, match="simulated crash"):
        opd(config=CONFIGS[method], store_uri=uri, run_id=run_id)
    monkeypatch.setitem(METHODS, method, real)
    return opd(config=CONFIGS[method], store_uri=uri, run_id=run_id)


@pytest.mark.parametrize("method", ["stride", "cloopd"])
def test_method_runs_checkpoints_its_state_and_resumes_exactly(prefect_server, uri, monkeypatch, method):
    torch.set_num_threads(1)
    summary = opd(config=CONFIGS[method], store_uri=uri, run_id=f"{method}-a")
    store = open_store(uri)
    steps = steps_of(store, f"{method}-a")
    assert [s.step for s in steps] == [0, 1, 2, 3] and all(math.isfinite(s.loss) for s in steps)
    assert all(s.metrics["teacher_tokens"] > 0 and s.tokens > 0 for s in steps)
    _, meta = from_bytes(store.get_blob(summary["candidate_id"]))
    if method == "stride":
        assert all({"gen_tokens", "stops", "restarts", "accuracy"} <= set(s.metrics) for s in steps)
        assert all(s.samples == 3 for s in steps)
        assert sum(s.metrics["restarts"] for s in steps) > 0  # the buffer was used across steps
        assert len(meta["method_state"]["stride_buffer"]) >= 3
    else:
        assert all(s.metrics["passes"] in (2.0, 3.0) and s.metrics["progress_1"] == s.metrics["progress_1"]
                   for s in steps)
        assert meta["method_state"]["cloopd"]["batches"] == 4
        assert meta["method_state"]["cloopd"]["third_passes"] == sum(s.metrics["third_pass"] for s in steps)

    resumed = crash_then_resume(monkeypatch, method, uri, f"{method}-b")  # a fresh run id in the same store
    assert [s.loss for s in steps_of(store, f"{method}-b")] == [s.loss for s in steps]
    assert resumed["candidate_id"] == summary["candidate_id"]
