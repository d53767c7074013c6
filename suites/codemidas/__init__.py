"""codemidas: coding environments built from installed Python source (CodeMidas)."""

from suites.codemidas.suite import CodeMidas

__all__ = ["CodeMidas"]
