"""A progress hook the CLI installs (a Rich bar); stages report through it, and with no
hook installed reporting costs nothing."""

from __future__ import annotations

from typing import Protocol


class Reporter(Protocol):
    def start(self, description: str, total: int) -> None: ...
    def advance(self, steps: int, status: str) -> None: ...


class _Silent:
    def start(self, description: str, total: int) -> None:
        pass

    def advance(self, steps: int, status: str) -> None:
        pass


_reporter: Reporter = _Silent()


def set_reporter(reporter: Reporter | None) -> None:
    global _reporter
    _reporter = reporter if reporter is not None else _Silent()


def reporter() -> Reporter:
    return _reporter
