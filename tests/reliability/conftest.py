"""The fault tests drive `benchmarks/faults.py` (a file, not a package) at the sizes the
README's reliability table reports: `faults` is that script loaded as a module."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "faults.py"


@pytest.fixture(scope="module")
def faults():
    spec = importlib.util.spec_from_file_location("benchmark_faults", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]
