"""The parent's validated reading of one sandboxed child's event lines (the protocol is
in ``harness.py``).

The lines come from inside the sandbox, so the candidate can write some of them itself
(it shares the harness's process and descriptors). What is accepted is deliberately
narrow: events in protocol order, and a result only for the next case requested, with
the expected case id and well-typed fields. Everything else (garbage, a line for a case
that was not requested or is not next, a duplicate, an over-long line) is dropped and
counted as a protocol violation. A candidate can still forge the line of the case it is
running, which gains it nothing it could not get by returning that output: the suite's
trusted scorer, outside the sandbox, judges every output.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

from suites.base import Case
from suites.executors.harness import MAX_OUTPUT_DEPTH, output_violation

_STATUSES = frozenset({"ok", "error", "memory", "invalid"})
_LOAD_STATUSES = frozenset({"error", "memory"})
_LINE_OVERHEAD_BYTES = 64 * 1024
_ERROR_CHARS = 2000


@dataclass(frozen=True)
class Record:
    """One case's result as reported by the child. ``observed_s`` is the parent's own
    clock between the previous event and this one."""

    status: str
    output: Any
    error: str | None
    wall_s: float | None
    cpu_s: float | None
    peak_rss_mb: float | None
    observed_s: float


class Transcript:
    """The accepted events of one child, fed with raw bytes from the results pipe."""

    def __init__(self, cases: Sequence[Case], max_output_bytes: int) -> None:
        self._cases = cases
        self._max_line = max_output_bytes + _LINE_OVERHEAD_BYTES
        self._buffer = bytearray()
        self._discarding = False
        self.ready = False
        self.loaded = False
        self.load_failure: tuple[str, str] | None = None
        self.records: list[Record] = []
        self.violations = 0
        self.last_event_at = time.monotonic()

    @property
    def complete(self) -> bool:
        """Every case has its outcome (a record each, or the shared load failure)."""
        return self.load_failure is not None or len(self.records) == len(self._cases)

    def feed(self, chunk: bytes) -> bool:
        """Consume bytes read from the pipe; True when an event was accepted. An
        over-long line is dropped as it arrives, so memory stays bounded."""
        accepted = False
        self._buffer += chunk
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._discarding:
                self._discarding = False
            elif len(line) <= self._max_line and self._accept(line):
                accepted = True
                self.last_event_at = time.monotonic()
            else:
                self.violations += 1
        if len(self._buffer) > self._max_line:
            self.violations += not self._discarding
            self._discarding = True
            self._buffer.clear()
        return accepted

    def _accept(self, line: bytes) -> bool:
        if too_deep(line):  # a result the parser cannot read: the next case's output is invalid
            return self._invalid_next(f"output is nested deeper than {MAX_OUTPUT_DEPTH} levels of lists and objects")
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(event, dict):
            return False
        kind = event.get("event")
        if not self.ready:
            self.ready = kind == "ready"
            return self.ready
        if not self.loaded and self.load_failure is None:
            if kind == "loaded":
                self.loaded = True
            elif kind == "load_failed" and event.get("status") in _LOAD_STATUSES and isinstance(event.get("error"), str):
                self.load_failure = (event["status"], event["error"][:_ERROR_CHARS])
            return self.loaded or self.load_failure is not None
        if kind != "result" or not self.loaded or self.complete:
            return False
        record = self._record(event)
        if record is not None and record.status == "ok" and (violation := output_violation(record.output)):
            record = replace(record, status="invalid", output=None, error=violation)
        if record is not None:
            self.records.append(record)
        return record is not None

    def _invalid_next(self, reason: str) -> bool:
        """Record the next requested case as ``invalid`` (only once the program loaded)."""
        if not self.loaded or self.complete:
            return False
        self.records.append(Record(status="invalid", output=None, error=reason, wall_s=None, cpu_s=None,
                                   peak_rss_mb=None, observed_s=time.monotonic() - self.last_event_at))
        return True

    def _record(self, event: dict[str, Any]) -> Record | None:
        """The event as the next case's record, or None when it is not exactly that."""
        index = len(self.records)
        status, error = event.get("status"), event.get("error")
        if (
            type(event.get("index")) is not int
            or event["index"] != index
            or event.get("case_id") != self._cases[index].case_id
            or status not in _STATUSES
            or (status == "ok") != ("output" in event)
            or not (error is None or isinstance(error, str))
        ):
            return None
        return Record(
            status=status,
            output=event.get("output"),
            error=None if error is None else error[:_ERROR_CHARS],
            wall_s=_non_negative(event.get("wall_s")),
            cpu_s=_non_negative(event.get("cpu_s")),
            peak_rss_mb=_non_negative(event.get("peak_rss_mb")),
            observed_s=time.monotonic() - self.last_event_at,
        )


def too_deep(line: bytes, limit: int = MAX_OUTPUT_DEPTH + 2) -> bool:
    """Whether a JSON line nests lists/objects deeper than ``limit`` (strings skipped), by
    an iterative scan; lines with fewer brackets than the limit are not scanned."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for byte in line:
        if in_string:
            escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _non_negative(value: Any) -> float | None:
    """A finite, non-negative number as float; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
