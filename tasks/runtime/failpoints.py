"""Named crash points for the kill-and-resume tests: `RATCHET_KILL_AT=stage:where`
(e.g. `sample:2`, `execute:r0002` after the first candidate of round 2 is published)
makes the process SIGKILL itself when it reaches that point, the way an operator's
`kill -9` or a lost node would end it; `RATCHET_FAIL_AT=stage:where` makes it raise
there instead. Unset, this does nothing."""

from __future__ import annotations

import os
import signal


def crash_point(stage: str, where: object) -> None:
    """SIGKILL the process at `RATCHET_KILL_AT=stage:where`; raise at `RATCHET_FAIL_AT`."""
    if os.environ.get("RATCHET_KILL_AT") == f"{stage}:{where}" and _first_to_arrive():
        os.kill(os.getpid(), signal.SIGKILL)
    fail_point(stage, where)


def _first_to_arrive() -> bool:
    """With `RATCHET_KILL_ONCE=PATH` only the first process to reach the point dies (it
    creates PATH): a Prefect retry of the flow run, which runs with the same environment,
    gets past it. Unset, every process reaching the point dies."""
    once = os.environ.get("RATCHET_KILL_ONCE")
    if not once:
        return True
    try:
        os.close(os.open(once, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


class InjectedFailure(RuntimeError):
    """Raised at a `RATCHET_FAIL_AT=stage:where` point (tests of failure recording)."""


def fail_point(stage: str, where: object) -> None:
    """Raise `InjectedFailure` when `RATCHET_FAIL_AT` names this point: the way a bug or
    a lost dependency would make a stage fail (rather than the process die)."""
    if os.environ.get("RATCHET_FAIL_AT") == f"{stage}:{where}":
        raise InjectedFailure(f"failure injected at {stage}:{where} (RATCHET_FAIL_AT)")
