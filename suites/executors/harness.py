"""The sandboxed child's side of the subprocess executor, and the per-case logic that
the in-process executor shares with it.

Run as a script inside the sandbox (``python -s -S -P -B harness.py RESULTS [STDOUT
STDERR]`` with the sandbox directory as cwd). It reads two JSON lines from stdin: the
*prelude* (the runner, the rlimits of the sandbox config, sys.path, the uid to drop to),
which the parent sends when it starts the child, and the *request* (the program, its
entrypoint, the cases and the child's CPU backstop), which may come much later: a child
can be started ahead of its batch and wait, warm, with the runner (and what it imports,
numpy say) already loaded (``warm.py``). A container reads both from one
``request.json`` instead. Before any candidate code exists in the process it applies the
rlimits and, when started as root, drops to the sandbox uid; then it loads the runner,
waits for the request, loads the program, runs the cases in order, and writes one JSON
line per event to RESULTS, a pipe the parent reads as lines arrive, so the results of
finished cases survive a later crash:

    {"event": "ready"}                                   request read, limits applied, uid dropped
    {"event": "loaded"}                                  program imported (the runner was before)
    {"event": "load_failed", "status": ..., "error": ...}
    {"event": "result", "index": i, "case_id": ..., "status": ..., "error": ...,
     "wall_s": ..., "cpu_s": ..., "peak_rss_mb": ..., "output": <JSON>}

It imports only the standard library, so a child's start-up costs only the interpreter
plus whatever the runner and the candidate import. Everything here runs inside the
candidate's process and can be tampered with by it: the parent validates the lines, and
the suite's trusted scorer, which lives outside the sandbox, re-judges every output.
"""

from __future__ import annotations

import _json  # json's C accelerator: the json package would also import re and enum (~6 ms of start-up)
import _signal  # signal's C half: the signal module imports enum, ~9 ms of every child's start-up
import os
import resource
import sys
import time
import types

TYPE_CHECKING = False  # not typing's: importing typing costs every child ~2 ms of start-up
if TYPE_CHECKING:
    from typing import Any, Callable

# Bound before any candidate code runs, so that replacing json's encoder or os.write in
# the candidate does not change what the harness writes.
_make_encoder = _json.make_encoder
_ascii = _json.encode_basestring_ascii
_write = os.write
_ERROR_CHARS = 400
_MIB = 1024 * 1024


def _not_serialisable(value: object) -> None:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps(value: object) -> str:
    """``json.dumps(value)`` with its default options (ASCII, NaN allowed, circular
    references refused), through the same C encoder ``json.dumps`` uses."""
    return "".join(_make_encoder({}, _not_serialisable, _ascii, None, ": ", ", ", False, False, True)(value, 0))


class _Parsing:
    """The options ``json.loads`` gives its C scanner (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.__getitem__


def _loads(text: str) -> object:
    """``json.loads`` of a document the parent wrote (no surrounding whitespace)."""
    value, end = _json.make_scanner(_Parsing())(text, 0)
    if text[end:].strip():
        raise ValueError(f"extra data after the JSON document at offset {end}")
    return value


def load_module(name: str, source: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module named ``name`` (file ``name.py`` in
    tracebacks). It is registered in ``sys.modules`` because dataclasses and pickling
    look their module up there; the caller removes it when that matters. The source is
    kept as ``__ratchet_source__`` (a runner that hands the program to another tool as a
    file, e.g. an OpenEvolve evaluator, writes it from there)."""
    module = types.ModuleType(name)
    module.__file__ = f"{name}.py"
    module.__ratchet_source__ = source
    sys.modules[name] = module
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def describe_error(exc: BaseException) -> str:
    """``Type: message (at file:line in function)`` for the innermost frame, capped in
    length. Never raises, whatever the exception's ``__str__`` does."""
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable message>"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if len(text) > _ERROR_CHARS:
        text = text[:_ERROR_CHARS] + "..."
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        text += f" (at {code.co_filename}:{tb.tb_lineno} in {code.co_name})"
    return text


MAX_OUTPUT_DEPTH = 64
"""Deepest nesting of lists and objects an output may have (a packing is 2 deep, a
toolsim harness about 6); deeper is an ``invalid`` output, never a failed stage."""
MAX_OUTPUT_ITEMS = 1_000_000
"""Most values (containers and scalars) an output may hold."""


def output_violation(value: Any, max_depth: int = MAX_OUTPUT_DEPTH, max_items: int = MAX_OUTPUT_ITEMS) -> str | None:
    """Why ``value`` is not bounded output data, or None. Walks iteratively, so no output
    can exhaust the stack here, in the parent's parser, or when a stage re-encodes it.
    The same check runs in the sandbox (before encoding) and in the parent (on every
    accepted result line: a candidate can forge its own line)."""
    stack, items = [(value, 1)], 0
    while stack:
        node, depth = stack.pop()
        items += 1
        if items > max_items:
            return f"output holds more than {max_items} values; the limit is {max_items}"
        if isinstance(node, (list, tuple, dict)):
            if depth > max_depth:
                return f"output is nested deeper than {max_depth} levels of lists and objects"
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None


def encode_output(output: Any, max_bytes: int) -> tuple[str | None, str | None]:
    """``(json_text, None)`` or ``(None, reason the output is invalid)``. Catches
    everything: a hostile output object may raise anything while being encoded."""
    try:
        violation = output_violation(output)
        if violation is not None:
            return None, violation
        text = _dumps(output)
    except BaseException as exc:
        return None, f"output is not JSON-serialisable: {describe_error(exc)}"
    if len(text) > max_bytes:  # json.dumps escapes to ASCII, so characters are bytes
        return None, f"output is {len(text)} bytes of JSON; the limit is max_output_bytes={max_bytes}"
    return text, None


def run_case(
    run: Callable[[Callable, Any], Any],
    fn: Callable,
    payload: Any,
    max_output_bytes: int,
    catching: type[BaseException],
    reset_peak: bool,
) -> dict[str, Any]:
    """Call ``run(fn, payload)`` and describe what happened: status, ``output_json``
    (the encoded output when ok), error, wall_s, cpu_s, peak_rss_mb. ``catching`` is
    BaseException in the sandbox (a candidate's SystemExit is its failure) and
    Exception in process (Ctrl-C must still stop the parent). ``reset_peak`` makes
    peak_rss_mb the case's own; the in-process executor leaves the parent's mark alone."""
    if reset_peak:
        _reset_peak_rss()
    cpu_start, wall_start = _cpu_seconds(), time.perf_counter()
    status, text, error = "ok", None, None
    try:
        value = run(fn, payload)
    except MemoryError as exc:
        status, error = "memory", describe_error(exc)
    except catching as exc:
        status, error = "error", describe_error(exc)
    else:
        text, error = encode_output(value, max_output_bytes)
        del value
        status = "ok" if error is None else "invalid"
    return {
        "status": status,
        "output_json": text,
        "error": error,
        "wall_s": time.perf_counter() - wall_start,
        "cpu_s": _cpu_seconds() - cpu_start,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _cpu_seconds() -> float:
    """User + system time of this process and of its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (Linux ``clear_refs`` 5) so that the peak is the
    case's own. Not possible once the harness has dropped root (the process is then not
    dumpable and its /proc files belong to root), nor off Linux; the peak then covers
    the process so far."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return  # the peak then covers the process so far (see above)


def _peak_rss_mb() -> float:
    """VmHWM (peak RSS since exec or the last reset); ru_maxrss where /proc is missing,
    though that also counts the parent's RSS before exec."""
    if os.path.exists("/proc/self/status"):
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / _MIB


def _emit(fd: int, event: dict[str, Any], output_json: str | None = None) -> None:
    """Write one event line; the output's JSON text is spliced in, not re-encoded."""
    line = _dumps(event)
    if output_json is not None:
        line = f'{line[:-1]}, "output": {output_json}}}'
    data = (line + "\n").encode()
    while data:
        data = data[_write(fd, data):]


def _apply_limits(limits: dict[str, list[int]], drop_to: int | None) -> None:
    """Set the rlimits (never above the current hard limit), make over-long writes fail
    with EFBIG instead of killing the process, then drop root for the sandbox uid."""
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name)
        current_hard = resource.getrlimit(which)[1]
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
    if drop_to is not None:
        os.setgroups([])
        os.setgid(drop_to)
        os.setuid(drop_to)


def load(
    runner_source: str, program_source: str, entrypoint: str, names: tuple[str, str] = ("runner", "candidate")
) -> tuple[Callable, Callable]:
    """The runner's ``run`` and the candidate's entrypoint, loaded as modules ``names``."""
    return load_runner(runner_source, names[0]), load_program(program_source, entrypoint, names[1])


def load_runner(source: str, name: str = "runner") -> Callable:
    run = getattr(load_module(name, source), "run", None)
    if not callable(run):
        raise AttributeError("the runner defines no function run(fn, payload)")
    return run


def load_program(source: str, entrypoint: str, name: str = "candidate") -> Callable:
    fn = getattr(load_module(name, source), entrypoint, None)
    if not callable(fn):
        raise AttributeError(f"the program defines no function {entrypoint!r}")
    return fn


def _open_channels(argv: list[str]) -> int:
    """The results pipe, ``argv[1]``: a descriptor number, or the path of a FIFO where no
    descriptor can be passed in (a container). ``argv[2:4]``, when given, are files that
    become stdout and stderr (a container's own streams would pass through its engine)."""
    fd = int(argv[1]) if argv[1].isdigit() else os.open(argv[1], os.O_WRONLY)
    for target, path in zip((1, 2), argv[2:4]):
        os.dup2(os.open(path, os.O_WRONLY | os.O_APPEND), target)
    return fd


class _Lines:
    """JSON documents, one per line, read from a descriptor as they arrive."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self) -> Any:
        """The next document; None at end of input (the parent dropped this child)."""
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return _loads(line.decode("utf-8"))


def _request_source() -> tuple[Any, Callable[[], Any]]:
    """The prelude, and how to get the request: from ``request.json`` when the parent
    wrote one (a container), else the next two lines of stdin."""
    if os.path.exists("request.json"):
        with open("request.json", encoding="utf-8") as handle:
            whole = _loads(handle.read())
        return whole, lambda: whole
    lines = _Lines(0)
    return lines.next(), lines.next


def main(argv: list[str]) -> None:
    """Serve one request (see the module docstring and ``_open_channels``)."""
    fd = _open_channels(argv)
    prelude, next_request = _request_source()
    if prelude is None:
        return
    _apply_limits(prelude["limits"], prelude["drop_to"])
    sys.path.extend(prelude["sys_path"])
    try:
        run, runner_error = load_runner(prelude["runner"]), None
    except BaseException as exc:  # reported once the request came, as a load failure
        run, runner_error = None, exc
    request = next_request()
    if request is None:
        return
    _apply_limits({"RLIMIT_CPU": request["cpu_limit"]}, None)
    _emit(fd, {"event": "ready"})
    try:
        if runner_error is not None:
            raise runner_error
        fn = load_program(request["program"], request["entrypoint"])
    except BaseException as exc:
        status = "memory" if isinstance(exc, MemoryError) else "error"
        _emit(fd, {"event": "load_failed", "status": status, "error": describe_error(exc)})
        return
    _emit(fd, {"event": "loaded"})
    harness_pid = os.getpid()
    for index, case in enumerate(request["cases"]):
        record = run_case(run, fn, case["payload"], prelude["max_output_bytes"], BaseException, reset_peak=True)
        if os.getpid() != harness_pid:  # a fork of the candidate returned into the harness
            os._exit(0)
        output_json = record.pop("output_json")
        _emit(fd, {"event": "result", "index": index, "case_id": case["case_id"], **record}, output_json)


if __name__ == "__main__":
    main(sys.argv)
