"""The layering of DESIGN.md, enforced with import-linter's contracts in pyproject.toml."""

import subprocess
import sys
from pathlib import Path


def test_import_contracts_hold():
    root = Path(__file__).resolve().parents[1]
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken" in result.stdout
