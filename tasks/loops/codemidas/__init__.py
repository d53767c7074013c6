"""codemidas: CodeMidas environment construction (hollow, derive tests, reliability and
difficulty gates, the registered environment set)."""
