"""What passes from the parent to a sandboxed child: the files of its directory (the
harness, and for a container the whole request) and the JSON lines on its stdin; and the
release of a child's directory afterwards."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import select
import shutil
import time
from functools import cache
from pathlib import Path
from typing import IO, Callable

from suites.executors.base import SandboxError

PREFIX = "ratchet-sbx-"
"""A child's directory is ``PREFIX<pid namespace>.<parent pid>-<random>`` under the
executor's tmp_root: the namespace tells whose pids they are (a tmp_root shared with
another container holds pids of another namespace, never swept from here)."""
STARTUP_TIMEOUT_S = 30.0
"""Wall-clock time the harness may take to start (before any candidate code runs)."""


@cache
def _harness_source() -> bytes:
    return (Path(__file__).parent / "harness.py").read_bytes()


def request_line(document: dict) -> bytes:
    try:
        return (json.dumps(document) + "\n").encode()
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"a case payload is not JSON-able, so it cannot enter the sandbox: {exc}") from exc


def send_line(fd: int, data: bytes) -> None:
    """Write ``data`` to a child's stdin, waiting at most STARTUP_TIMEOUT_S for it to be
    read. A child that died or stopped reading gets no more; its supervision then finds
    that it never became ready."""
    os.set_blocking(fd, False)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    view = memoryview(data)
    while view:
        if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
            return
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue
        except BrokenPipeError:
            return


def once(action: Callable[[], None]) -> Callable[[], None]:
    """``action``, run by the first call only."""
    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            action()

    return once


def releaser(stop_child: Callable[[], None], out: IO[bytes], err: IO[bytes], sandbox_dir: str,
              isolation: str) -> Callable[[], None]:
    """Kill the child (if not yet), close its files and remove its directory; once."""

    def release() -> None:
        try:
            stop_child()
        finally:
            out.close()
            err.close()
            remove_tree(sandbox_dir, isolation)

    return once(release)


def write_sandbox_files(sandbox_dir: str, request: dict | None) -> None:
    """The harness, and the whole request as ``request.json`` where the child reads it
    from there (a container)."""
    if request is not None:
        Path(sandbox_dir, "request.json").write_text(request_line(request).decode(), encoding="utf-8")
    Path(sandbox_dir, "harness.py").write_bytes(_harness_source())


def remove_tree(path: str, isolation: str) -> None:
    """Delete a sandbox directory. Without root, the candidate ran as our uid and may
    have taken the permissions off its directories, so they are given back first
    (symlinks skipped: chmod would follow them out). Under isolation none a setsid()
    escapee may still be writing here, so what it leaves is not an error."""
    if os.geteuid() != 0:
        os.chmod(path, 0o700)
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o700)
    shutil.rmtree(path, ignore_errors=isolation == "none")


_swept: set[str] = set()
_sweep_lock = threading.Lock()


def new_sandbox_dir(tmp_root: str, isolation: str) -> str:
    """A fresh directory for one child. The first in a process also removes what dead
    parents left under ``tmp_root`` (a SIGKILLed run cannot clean up after itself; the
    pre-started child it kept waiting died with it)."""
    with _sweep_lock:
        if tmp_root not in _swept:
            _swept.add(tmp_root)
            sweep_orphans(tmp_root, isolation)
    return tempfile.mkdtemp(prefix=f"{PREFIX}{_owner(os.getpid())}-", dir=tmp_root)


def sweep_orphans(tmp_root: str, isolation: str) -> list[str]:
    """Remove the child directories under ``tmp_root`` whose parent process is gone;
    returns their paths. A live parent's (or a reused pid's) are left alone."""
    removed = []
    try:
        names = os.listdir(tmp_root)
    except OSError:
        return removed
    namespace = _owner(0).split(".")[0]
    for name in names:
        owner = name[len(PREFIX):].split("-", 1)[0]
        ours, _, pid = owner.partition(".")
        if not name.startswith(PREFIX) or ours != namespace or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(tmp_root, name)
        try:
            remove_tree(path, isolation)
        except OSError:
            continue  # another process's sweep, or a file we may not remove: left as it is
        removed.append(path)
    return removed


def _owner(pid: int) -> str:
    """``<pid namespace inode>.<pid>``."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{namespace}.{pid}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
