"""Where `run_chunk` sends a chunk: here without a cluster; to a GPU worker with one,
unless the chunk is published (read back here, so a finished chunk needs no cluster);
the progress bar advances only for a chunk that trained. `worker_name` names the Dask
worker it runs on, "local" elsewhere."""

from types import SimpleNamespace

import pytest

import tasks.training.placement as placement
from tasks.runtime.context import RunRef
from tasks.runtime.progress import set_reporter

REF = RunRef(store_uri="/nowhere", run_id="r")


class Recorder:
    def __init__(self):
        self.advanced = []

    def start(self, description, total):
        pass

    def advance(self, steps, status):
        self.advanced.append((steps, status))


@pytest.fixture
def routed(monkeypatch):
    """run_chunk with a fake config and store: set `address` and `published`; `remote`
    records what went to the cluster, `reporter` what the progress bar got."""
    state = SimpleNamespace(address=None, published=False, remote=[], reporter=Recorder())
    monkeypatch.setattr(placement, "run_config", lambda ref: SimpleNamespace(dask_address=state.address))
    store = SimpleNamespace(has_part=lambda table, run_id, stage, key:
                            state.published and (table, run_id, stage, key) == ("train_steps", "r", "train", "c0002"))
    monkeypatch.setattr(placement, "store_for", lambda uri: store)

    def on_gpu_worker(address, work, *args):
        state.remote.append((address, args))
        return work(*args)

    monkeypatch.setattr(placement, "on_gpu_worker", on_gpu_worker)
    set_reporter(state.reporter)
    yield state
    set_reporter(None)


def work(ref, chunk, first_step, n_steps, parent):
    return f"{parent}+{n_steps}", f"step {first_step + n_steps}"


def test_without_a_cluster_the_chunk_trains_here(routed):
    assert placement.run_chunk(REF, "train", 2, 4, 2, work, "p") == "p+2"
    assert routed.remote == [] and routed.reporter.advanced == [(2, "step 6")]


def test_with_a_cluster_the_chunk_goes_to_a_gpu_worker(routed):
    routed.address = "tcp://127.0.0.1:1"
    assert placement.run_chunk(REF, "train", 2, 4, 2, work, "p") == "p+2"
    assert routed.remote == [("tcp://127.0.0.1:1", (REF, 2, 4, 2, "p"))]
    assert routed.reporter.advanced == [(2, "step 6")]


def test_a_published_chunk_is_read_back_here_and_does_not_advance_progress(routed):
    routed.address, routed.published = "tcp://127.0.0.1:1", True
    read_back = lambda ref, chunk, first_step, n_steps, parent: ("stored", None)  # noqa: E731
    assert placement.run_chunk(REF, "train", 2, 4, 2, read_back, "p") == "stored"
    assert routed.remote == [] and routed.reporter.advanced == []


def test_worker_name_is_the_dask_workers_name_or_local():
    from distributed import Client, LocalCluster

    assert placement.worker_name() == "local"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, resources=placement.GPU,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        (info,) = client.scheduler_info()["workers"].values()
        assert client.submit(placement.worker_name, resources=placement.GPU, pure=False).result() == str(info["name"])
    assert placement.worker_name() == "local"
