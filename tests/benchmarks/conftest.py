"""The benchmark scripts are files, not packages: each test module names its script as
`SCRIPT`, and `bench` loads that file as a module for the module's tests."""

import importlib.util
import sys

import pytest


@pytest.fixture(scope="module")
def bench(request):
    script = request.module.SCRIPT
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]
