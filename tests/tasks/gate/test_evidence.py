"""Evidence JSON: nan and infinities become None, numpy scalars plain numbers, so the
strict dump (DuckDB's json functions read it) always succeeds."""

import json
import math

import numpy as np
import pytest

from tasks.gate.evidence import dump_evidence, json_safe


def test_json_safe_replaces_non_finite_floats_recursively():
    value = {"a": math.nan, "b": [1.0, math.inf, (2, -math.inf)], 3: {"c": np.float64(0.5), "d": np.bool_(True)}}
    assert json_safe(value) == {"a": None, "b": [1.0, None, [2, None]], "3": {"c": 0.5, "d": True}}
    assert json.loads(dump_evidence(json_safe(value)))["b"] == [1.0, None, [2, None]]


def test_the_strict_dump_refuses_what_was_not_made_safe():
    with pytest.raises(ValueError):
        dump_evidence({"x": math.nan})
