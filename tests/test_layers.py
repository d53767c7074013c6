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
