"""Evaluator of the example problem, in OpenEvolve's format: `evaluate(program_path)`
returns a metrics dict whose `combined_score` is the objective; `evaluate_stage1` is the
cheap first stage of the cascade (4 points instead of 61)."""

import importlib.util
import math


def _target(x):
    return math.sin(x) + 0.1 * x * x


def _load(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _score(program_path, points):
    values = _load(program_path).run(points)
    if len(values) != len(points) or not all(isinstance(v, float) and math.isfinite(v) for v in values):
        return {"combined_score": 0.0, "valid": 0.0}
    mse = sum((v - _target(x)) ** 2 for v, x in zip(values, points)) / len(points)
    return {"combined_score": 1.0 / (1.0 + mse), "mse": mse, "valid": 1.0}


def evaluate_stage1(program_path):
    return _score(program_path, [0.0, 1.0, 2.0, 3.0])


def evaluate(program_path):
    return _score(program_path, [i * 0.05 for i in range(61)])
