"""Suites by name: ``get_suite("bin_packing", datasets=["or1"])``."""

from __future__ import annotations

import inspect

from suites.base import Suite
from suites.bin_packing import BinPacking
from suites.circle_packing import CirclePacking
from suites.codemidas import CodeMidas
from suites.lasso import Lasso
from suites.openevolve import OpenEvolve
from suites.pde1d import Pde1d
from suites.spin import Spin
from suites.toolsim import ToolSim

SUITES: dict[str, type[Suite]] = {
    CirclePacking.name: CirclePacking,
    BinPacking.name: BinPacking,
    Lasso.name: Lasso,
    ToolSim.name: ToolSim,
    Spin.name: Spin,
    CodeMidas.name: CodeMidas,
    OpenEvolve.name: OpenEvolve,
    Pde1d.name: Pde1d,
}


def get_suite(name: str, **params) -> Suite:
    """The suite called ``name``, built with ``params``. Unknown names and parameters
    are refused with the known ones listed, so a typo in a loop config fails at once
    instead of silently running a default."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; known suites: {sorted(SUITES)}")
    cls = SUITES[name]
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"suite {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {accepted}"
        )
    return cls(**params)
