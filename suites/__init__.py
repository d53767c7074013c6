"""Evaluation suites: cases with splits, the sandbox runner and the trusted scorer of
each benchmark (see ``suites.base``). ``get_suite(name, **params)`` builds one by name."""

from suites.registry import SUITES, get_suite

__all__ = ["SUITES", "get_suite"]
