"""Write the shipped task set: ``python -m suites.codemidas.ship OUT.json`` builds the
tasks of `SOURCES` in the subprocess sandbox and writes every candidate with its record
(run once by a maintainer; the suite then reads the pinned file)."""

from __future__ import annotations

import json
import sys
import sysconfig

from schemas.configs import SandboxConfig
from suites.codemidas.build import build_modules
from suites.executors import make_executor

SOURCES: dict[str, tuple[str, ...]] = {
    "bisect": (), "colorsys": (), "calendar": (), "datetime": (), "ipaddress": (), "imaplib": (),
    "quopri": (), "dataclasses": (), "enum": ("_is_single_bit", "_is_private", "_dedent"),
    "pickle": ("encode_long",), "platform": ("_norm_version",), "inspect": ("indentsize",),
    "locale": ("_strip_padding",), "ast": ("_pad_whitespace", "_splitlines_no_ff"),
    "_pydecimal": ("_sqrt_nearest", "_rshift_nearest", "_div_nearest", "_log10_lb"),
    "heapq": ("_siftdown",), "doctest": ("_comment_line",),
}
"""Installed modules (stdlib) and the functions taken from each (empty: every task function)."""


def pool(sources: dict[str, tuple[str, ...]] = SOURCES) -> list[str]:
    """The candidate ids (``module::function``) of ``sources``, in module then source order."""
    import importlib
    import inspect

    from suites.codemidas.hollow import task_functions

    out = []
    for module, names in sources.items():
        functions = task_functions(inspect.getsource(importlib.import_module(module)))[0]
        out += [f"{module}::{f.name}" for f in functions if not names or f.name in names]
    return out


def main(path: str, seed: int = 0, n_tests: int = 24) -> None:
    built = build_modules(make_executor(SandboxConfig(timeout_s=2.0)), list(SOURCES), seed, n_tests, pool())
    payload = {"python": sysconfig.get_python_version(), "seed": seed, "n_tests": n_tests,
               "tasks": [b.to_json() for b in built]}
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=1, sort_keys=True)
        handle.write("\n")
    kept = sum(b.kept for b in built)
    print(f"{len(built)} candidates, {kept} kept -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
