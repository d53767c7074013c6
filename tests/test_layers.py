"""The layering of DESIGN.md, enforced with import-linter's contracts in pyproject.toml, and
pyflakes-level hygiene (ruff F: unused imports and variables, undefined names)."""

import subprocess
import sys
from pathlib import Path


def test_import_contracts_hold():
    root = Path(__file__).resolve().parents[1]
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken" in result.stdout


def test_no_unused_imports_or_undefined_names():
    root = Path(__file__).resolve().parents[1]
    ruff = Path(sys.executable).with_name("ruff")
    result = subprocess.run([str(ruff), "check", "--select", "F,E9", "--no-cache", "."], cwd=root,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_loop_package_and_flow_is_under_the_independence_contracts():
    """A new loop is not exempt: its package and its flow are in the contracts' lists."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    listed = {m for c in contracts if c["type"] == "independence" for m in c["modules"]}
    packages = {f"tasks.loops.{p.name}" for p in (root / "tasks" / "loops").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    flows = {f"flows.{p.stem}" for p in (root / "flows").glob("*.py") if p.stem != "__init__"}
    assert packages - listed == set() and flows - listed == set()
