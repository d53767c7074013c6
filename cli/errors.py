"""How the CLI fails: a user's mistake is one line naming what is wrong and how to fix it
(exit code 2), a run that fails is one line naming the run and how to look at it (exit
code 1), Ctrl-C prints the command that finishes the run (exit code 130). Tracebacks only
with `ratchet --debug ...` (or RATCHET_DEBUG=1)."""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable, TypeVar

import typer

F = TypeVar("F", bound=Callable)

DEBUG = {"on": os.environ.get("RATCHET_DEBUG", "") not in ("", "0")}


class UsageError(ValueError):
    """A user's mistake, found before any work: the message says what and how to fix it."""


class RunFailed(Exception):
    """A run ended with status `failed`; the message names the run and the cause."""


class Interrupted(Exception):
    """Ctrl-C during a run; the message is the command that finishes it."""


def say(message: str) -> None:
    print(message, file=sys.stderr)


def friendly(command: F) -> F:
    """Wrap a command so the errors above (and malformed user input the libraries reject)
    become one line and an exit code instead of a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except BaseException as exc:
            if DEBUG["on"]:
                raise
            code, message = classify(exc)
            if code is None:
                raise
            say(message)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


def classify(exc: BaseException) -> tuple[int | None, str]:
    """(exit code, one-line message) for errors the CLI explains; (None, "") otherwise."""
    from pydantic import ValidationError

    if isinstance(exc, UsageError):
        return 2, f"error: {exc}"
    if isinstance(exc, ValidationError):
        return 2, f"error: {validation_line(exc)}"
    if isinstance(exc, RunFailed):
        return 1, f"error: {exc}"
    if isinstance(exc, (Interrupted, KeyboardInterrupt)):
        return 130, f"interrupted. {exc}" if str(exc) else "interrupted."
    if isinstance(exc, SystemExit) and isinstance(exc.code, str):
        return 1, f"error: {exc.code}"
    if isinstance(exc, SystemExit):
        return (exc.code if isinstance(exc.code, int) else 1), ""
    return 1, (f"error: {type(exc).__name__}: {exc}\n(this looks like a bug in Ratchet; "
               "rerun with `ratchet --debug ...` for the traceback)")


def validation_line(exc) -> str:
    """A pydantic ValidationError as one line: the field's dotted path and the reason."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or exc.title
        message = error.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if error.get("loc") else message)
    return "; ".join(parts)
