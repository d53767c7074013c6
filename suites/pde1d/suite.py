"""pde1d: fine-tune a pretrained neural operator from a source PDE condition to a target.

A condition is (family, coefficient): ``advection:a`` (u_t + a u_x = 0) or
``burgers:nu`` (u_t + u u_x = nu u_xx), on 64 periodic points, 10 frames of dt = 0.1
(``suites/pde1d/data.py``). The operator (``operator.py``: one spectral layer, complex
weights per Fourier mode on u and u^2) is pretrained by least squares on the source's
training trajectories here, in the trusted parent (cached per condition and seed), and
reaches the sandbox as weights in the payload. A candidate is a program whose
``config()`` returns a fine-tuning configuration inside ``CONFIG_SPACE`` (``space.py``):
learning rate, optimizer, loss, epochs, Fourier modes kept, weight decay. The seed is
``seed.py``.

Splits, scaled from the paper's 750 / 350 / 1000 trajectories by 1/25: 30 train
(fine-tuning data; the first 6 are also the train cases), 14 select, 40 holdout target
trajectories, each with its own seeded initial condition; a case is ``per_case`` (2)
trajectories. The source's 30 pretraining trajectories use other seeds.

Runner (inside the sandbox): calls ``config()``, refuses an out-of-space config with
its reason (output, not a crash), regenerates the target's training trajectories from
their seeds, fine-tunes a fresh copy of the pretrained weights (once per config in a
sandbox process) and returns the autoregressive rollout of every case trajectory from
its frame 0. Only frame 0 enters the sandbox; the reference frames stay here.

Trusted scorer (here): re-validates the config the runner reports, checks the shape and
finiteness of the predictions, and computes each trajectory's nRMSE = ||pred - ref|| /
||ref|| over frames 1..10 (clipped at 10). Primary metric ``neg_nrmse`` = -mean nRMSE
of the case's trajectories (higher is better); invalid scores ``FLOOR`` = -10.

Limits: the candidate runs in the runner's process, so a program that did more than
return a dict (rewrote the runner's globals, solved the PDE itself) could forge the
predictions; the constant mutations never do, an LLM proposer is not stopped by this.
"""

from __future__ import annotations

import inspect
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from suites.base import Case, Suite, Verdict
from suites.pde1d import data, operator, space
from suites.pde1d.data import trajectories
from suites.pde1d.operator import fine_tune, rollout
from suites.pde1d.space import CONFIG_SPACE, validate_config

FLOOR = -10.0
"""``neg_nrmse`` of an invalid output; valid nRMSEs are clipped at -FLOOR."""
GRID = {"n": 64, "dt": 0.1, "steps": 10, "refine": 8}
TRAIN_CASES = 6
"""Training trajectories that are also scored, as the train split's cases."""
SEED_OFFSETS = {"source": 0, "train": 100_000, "select": 200_000, "holdout": 300_000}
LIMITS = {"advection": (-5.0, 5.0), "burgers": (0.005, 1.0)}
SEED_PROGRAM = Path(__file__).with_name("seed.py").read_text()

_RUNNER_HEAD = f'''from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"  # before numpy: one BLAS thread
import json
import math
from numbers import Real

import numpy as np

CONFIG_SPACE = {CONFIG_SPACE!r}
_TRAINED = {{}}
'''
_TRAINED: dict[str, tuple] = {}
"""Training trajectories per target, and fine-tuned weights per (config, pretrained
weights, target), in whichever process runs ``run``."""


def run(fn, payload):
    """Fine-tune with the candidate's config (once per process) and roll out the case."""
    config = fn()
    reason = validate_config(config)
    if reason:
        return {"invalid": reason}
    target, grid = payload["target"], payload["grid"]
    data_key = json.dumps([target, grid, payload["train_seeds"]], sort_keys=True)
    if data_key not in _TRAINED:
        _TRAINED[data_key] = trajectories(target["family"], target["coef"], payload["train_seeds"], grid["n"],
                                          grid["dt"], grid["steps"], grid["refine"])
    key = json.dumps([config, payload["pretrained"], data_key], sort_keys=True)
    if key not in _TRAINED:
        pretrained = np.array(payload["pretrained"]["re"]) + 1j * np.array(payload["pretrained"]["im"])
        _TRAINED[key] = fine_tune(pretrained, _TRAINED[data_key], config)
    weights, losses = _TRAINED[key]
    pred = rollout(weights, np.array(payload["u0"], dtype=float), grid["steps"])
    return {"config": config, "pred": pred.tolist(), "train_loss": [losses[0], losses[-1]]}


RUNNER_SOURCE = "\n\n".join(
    [_RUNNER_HEAD] + [inspect.getsource(f) for f in (
        data.sine_coefficients, data.sine_sum, data.advection, data.burgers, data.trajectories,
        operator.features, operator.step, operator.rollout, operator.loss_and_grad, operator.fine_tune,
        space._check, space.validate_config, run)])
"""The sandbox runner: this package's generators, operator, config check and ``run``."""


def parse_condition(text: str) -> tuple[str, float]:
    """``"burgers:0.02"`` -> ("burgers", 0.02), refused with the allowed ranges."""
    family, _, coef = str(text).partition(":")
    try:
        value = float(coef)
    except ValueError:
        value = math.nan
    if family not in LIMITS or not LIMITS[family][0] <= value <= LIMITS[family][1]:
        raise ValueError(f"pde1d: a condition is 'advection:a' with a in [-5, 5] or 'burgers:nu' with nu in "
                         f"[0.005, 1], got {text!r}")
    return family, value


@lru_cache(maxsize=32)
def condition_trajectories(family: str, coef: float, seeds: tuple[int, ...]) -> np.ndarray:
    """The trusted trajectories of one condition (cached: the scorer asks once a case)."""
    return data.trajectories(family, coef, list(seeds), GRID["n"], GRID["dt"], GRID["steps"], GRID["refine"])


@lru_cache(maxsize=16)
def pretrained_weights(family: str, coef: float, seeds: tuple[int, ...]) -> np.ndarray:
    """The source operator: least squares on the source's trajectories."""
    return operator.pretrain(condition_trajectories(family, coef, seeds))


def nrmse(pred: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per trajectory ||pred - ref|| / ||ref|| over all its frames and points."""
    flat = len(ref), -1
    return np.linalg.norm((pred - ref).reshape(flat), axis=1) / np.linalg.norm(ref.reshape(flat), axis=1)


class Pde1d(Suite):
    """Test nRMSE of a pretrained 1D operator fine-tuned with the candidate's config."""

    name = "pde1d"
    primary_metric = "neg_nrmse"
    entrypoint = "config"
    artifact_kind = "config"
    candidate = "a Python `config()` returning a fine-tuning configuration (lr, optimizer, loss, epochs, modes, decay)"
    reference = "the pretrained operator without fine-tuning; Optuna TPE and random search (benchmarks/pde1d_baselines.py)"

    def __init__(self, source: str = "burgers:0.1", target: str = "burgers:0.02", train: int = 30,
                 select: int = 14, holdout: int = 40, per_case: int = 2, seed: int = 0):
        self.source, self.target = parse_condition(source), parse_condition(target)
        sizes = {"train": train, "select": select, "holdout": holdout, "per_case": per_case, "seed": seed}
        for label, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if label == "seed" else 1):
                raise ValueError(f"pde1d: {label} must be an integer >= {0 if label == 'seed' else 1}, got {value!r}")
        if min(train, select, holdout) < per_case:
            raise ValueError(f"pde1d: every split needs at least per_case={per_case} trajectories")
        self.sizes, self.per_case, self.seed = {"train": train, "select": select, "holdout": holdout}, per_case, seed

    def seeds(self, split: str) -> tuple[int, ...]:
        """The initial-condition seeds of a split (``source``: the pretraining set)."""
        count = self.sizes["train" if split == "source" else split]
        base = 1_000_000 * self.seed + SEED_OFFSETS[split]
        return tuple(range(base, base + count))

    def _case_seeds(self, split: str) -> tuple[int, ...]:
        """The seeds a split's cases cover, in case order (``per_case`` each)."""
        seeds = self.seeds(split)[:TRAIN_CASES] if split == "train" else self.seeds(split)
        return seeds[:len(seeds) - len(seeds) % self.per_case]

    def pretrained(self) -> np.ndarray:
        return pretrained_weights(*self.source, self.seeds("source"))

    def cases(self) -> list[Case]:
        weights = self.pretrained()
        shared = {"target": {"family": self.target[0], "coef": self.target[1]}, "grid": dict(GRID),
                  "train_seeds": list(self.seeds("train")),
                  "pretrained": {"re": weights.real.tolist(), "im": weights.imag.tolist()}}
        cases, k = [], self.per_case
        for split in ("train", "select", "holdout"):
            u0 = condition_trajectories(*self.target, self._case_seeds(split))[:, 0]
            for index in range(len(u0) // k):
                cases.append(Case(f"{split}/{index:03d}", split, {**shared, "u0": u0[index * k:(index + 1) * k].tolist()}))
        return cases

    def reference_frames(self, case: Case) -> np.ndarray:
        """The case's reference trajectories (per_case, steps + 1, n), from its id."""
        split, index = case.case_id.split("/")
        k = self.per_case
        return condition_trajectories(*self.target, self._case_seeds(split))[int(index) * k:(int(index) + 1) * k]

    def seed_program(self) -> str:
        return SEED_PROGRAM

    def runner_source(self) -> str:
        return RUNNER_SOURCE

    def score(self, case: Case, output: Any) -> Verdict:
        floor = {self.primary_metric: FLOOR}
        if not isinstance(output, dict):
            return Verdict(False, floor, "output must be a dict")
        if "invalid" in output:
            return Verdict(False, floor, f"config outside the space: {output['invalid']}")
        reason = validate_config(output.get("config"))
        if reason:
            return Verdict(False, floor, f"config outside the space: {reason}")
        ref = self.reference_frames(case)[:, 1:]
        try:
            pred = np.asarray(output.get("pred"), dtype=float)
        except (TypeError, ValueError):
            pred = None
        if pred is None or pred.shape != ref.shape:
            return Verdict(False, floor, f"pred must be numbers of shape {list(ref.shape)}")
        if not np.all(np.isfinite(pred)):
            return Verdict(False, floor, "pred holds a value that is not finite (training diverged)")
        errors = np.minimum(nrmse(pred, ref), -FLOOR)
        final = np.minimum(nrmse(pred[:, -1:], ref[:, -1:]), -FLOOR)
        return Verdict(True, {self.primary_metric: -float(errors.mean()), "nrmse": float(errors.mean()),
                              "nrmse_final": float(final.mean())})

    def normalize(self, value: float) -> float:
        """1 - nRMSE: 1.0 for exact predictions, 0.0 for predicting zeros."""
        return 1.0 + value

