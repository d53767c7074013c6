"""What every stage needs to find its run: the store, the run's config, its suite.

Tasks receive a small `RunRef` (store URI + run id), never large data; everything else
is read from the store and cached per process."""

from __future__ import annotations

import json
import os
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from schemas.configs import RunConfig
from schemas.rows import RunRow
from storage.store import TableStore, open_store
from storage.tracking import Tracker, make_tracker
from suites import get_suite
from suites.base import Case, Suite


class RunRef(BaseModel):
    """A run's address: enough for any stage, on any worker, to find everything else."""

    model_config = ConfigDict(frozen=True)
    store_uri: str
    run_id: str


@lru_cache(maxsize=8)
def store_for(uri: str) -> TableStore:
    return open_store(uri)


def first_start(store: TableStore, run_id: str) -> RunRow:
    """A run's first `running` event: its config, anchored scorer and start point."""
    rows = [r for r in store.read_rows("runs", run_id) if r.status == "running"]
    if not rows:
        raise LookupError(f"run {run_id!r} has no start event in store {store.root_uri!r}")
    return min(rows, key=lambda r: r.event_at)


@lru_cache(maxsize=64)
def run_config(ref: RunRef) -> RunConfig:
    """The config the run started with (its first `running` event)."""
    first = first_start(store_for(ref.store_uri), ref.run_id)
    return RunConfig.from_stored(json.loads(first.config_json)["config"])


def anchored_scorer_version(ref: RunRef) -> str:
    """The scorer version the run was anchored to when it started."""
    return json.loads(first_start(store_for(ref.store_uri), ref.run_id).config_json)["scorer_version"]


@lru_cache(maxsize=16)
def suite_for(name: str, params_json: str) -> Suite:
    return get_suite(name, **json.loads(params_json))


def make_suite(config: RunConfig, name: str):
    """The run's suite `name`: a registry suite built from `suite_params`, or (for the
    training loops) the arith suite over the loop config's categories. Arith's
    candidates are weights, not programs, so it is not a registry `Suite`."""
    params_json = json.dumps(config.suite_params, sort_keys=True)
    if name == "arith":
        return arith_for(config.arith_categories(), params_json)
    return suite_for(name, params_json)


@lru_cache(maxsize=8)
def arith_for(categories: tuple[str, ...], params_json: str):
    from suites.arith import Arith  # imports torch: only the post-training loops pay for it

    return Arith(categories=categories, **json.loads(params_json))


def run_suite(ref: RunRef) -> Suite:
    config = run_config(ref)
    return suite_for(config.suite, json.dumps(config.suite_params, sort_keys=True))


def dask_address(config: RunConfig) -> str | None:
    """The Dask scheduler a run's stages submit to: the config's, else the worker
    environment's RATCHET_DASK_ADDRESS (how a deployment is switched onto a cluster),
    else none (threads and processes of the flow's own machine)."""
    return config.dask_address or os.environ.get("RATCHET_DASK_ADDRESS") or None


def cases_by_split(suite: Suite, *splits: str) -> list[Case]:
    return [c for c in suite.cases() if c.split in splits]


@lru_cache(maxsize=8)
def tracker_for(ref: RunRef) -> Tracker:
    """The run's tracker: MLflow (URI from MLFLOW_TRACKING_URI, else SQLite under the
    store) or the null tracker when the run was started with tracking off."""
    return make_tracker(store_for(ref.store_uri), os.environ.get("MLFLOW_TRACKING_URI"), run_config(ref).tracking)
