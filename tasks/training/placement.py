"""Where a training chunk runs. The flows call one Prefect task per chunk, in the flow's
process; inside it `run_chunk` sends the chunk's work function to the run's Dask cluster
(`RunConfig.dask_address`, else the worker environment's RATCHET_DASK_ADDRESS) as a future that only a worker offering the `GPU` resource
(`dask worker --resources GPU=1`) may run, or calls it in this process when the run has
no cluster. The work function takes the RunRef and small values (chunk, steps, candidate
ids) and reads and writes the store itself, so a worker needs the store's URI (a folder
it shares, or s3://), never the flow's memory.

A worker lost mid-chunk loses only that chunk: the scheduler keeps the future and runs
the chunk again from its published parent when a worker with the resource (re)joins,
which reproduces it (every step is seeded by the run's seed and the step). Until one is
connected the future waits."""

from __future__ import annotations

import sys
from typing import Callable, TypeVar

from tasks.runtime.context import RunRef, dask_address, run_config, store_for
from tasks.runtime.progress import reporter

GPU = {"GPU": 1}
"""The resource a training chunk asks of its Dask worker."""

LOCAL = "local"
"""`worker` of a chunk trained in the flow's own process."""

T = TypeVar("T")


def chunk_key(chunk: int) -> str:
    return f"c{chunk:04d}"


def worker_name() -> str:
    """The name of the Dask worker running this code, or "local" outside a worker."""
    if "distributed" not in sys.modules:  # a worker has imported it: no need to pay for it here
        return LOCAL
    from distributed import get_worker

    try:
        return str(get_worker().name)
    except ValueError:  # "No worker found"
        return LOCAL


def run_chunk(ref: RunRef, stage: str, chunk: int, first_step: int, n_steps: int,
              work: Callable[..., tuple[T, str | None]], *inputs) -> T:
    """`work(ref, chunk, first_step, n_steps, *inputs) -> (output, status)` on a GPU worker
    of the run's cluster, or here when the run has none or the chunk is published (its
    `train_steps` part of `stage` exists: the work function only reads its output back,
    so a finished chunk needs no cluster). Advances the progress bar by `n_steps` with
    `status` when the chunk trained (None: read back); returns `output`."""
    args = (ref, chunk, first_step, n_steps, *inputs)
    address = dask_address(run_config(ref))
    if address is None or store_for(ref.store_uri).has_part("train_steps", ref.run_id, stage, chunk_key(chunk)):
        output, status = work(*args)
    else:
        output, status = on_gpu_worker(address, work, *args)
    if status is not None:
        reporter().advance(n_steps, status)
    return output


def on_gpu_worker(address: str, work: Callable[..., T], *args) -> T:
    """`work(*args)` as a future on a worker of the cluster at `address` that offers the
    GPU resource; its result (the worker's exception, if it raised)."""
    from distributed import Client

    with Client(address, timeout="30s") as client:
        return client.submit(work, *args, resources=GPU, pure=False).result()
