"""What the ``unshare`` isolation level mounts inside its new mount namespace before the
harness starts (``sandbox.py`` runs it as the namespace's init): private /tmp and
/dev/shm, an empty tmpfs over the project, the shared folder and the store, and the
sandbox directory and the interpreter's folders bound back. Pure: paths in, shell text out."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Sequence

_PRIVATE = ("/tmp", "/dev/shm")
"""Fresh tmpfs mounts under unshare: what the candidate writes there dies with it."""
_PRIVATE_SIZE = "64m"


def hidden_paths() -> list[str]:
    """The folders an ``unshare`` sandbox covers with an empty tmpfs: the project (the
    suites' scorer sources and reference data, and the default store ``./.ratchet``),
    the shared folder beside it, and a local store named by ``$RATCHET_STORE`` (the CLI
    sets it for every run). Those under /tmp or /dev/shm vanish with the private tmpfs."""
    project = Path(__file__).resolve().parents[2]
    found = [project, project.parent / "shared"]
    store = os.environ.get("RATCHET_STORE", "")
    if store and "://" not in store:
        found.append(Path(store).expanduser().resolve())
    return outermost([str(p) for p in found if p.is_dir() and not under(str(p), _PRIVATE)])


def under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def unshare_script(sandbox_dir: str, hidden: Sequence[str], rebinds: Sequence[str]) -> str:
    """The shell commands the new namespaces' init runs before the harness: fresh tmpfs
    mounts on /dev/shm and /tmp, an empty one on each ``hidden`` folder, and the sandbox
    directory and ``rebinds`` (the interpreter's folders inside a hidden one, read-only)
    back at their paths: bound to a staging folder first, moved into place after."""
    q = shlex.quote
    keep = [*rebinds, sandbox_dir]
    stage = "/dev/shm/.ratchet-stage"
    lines = ["set -e", "scrubbed=$PATH", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"mount -t tmpfs -o mode=1777,size={_PRIVATE_SIZE} tmpfs /dev/shm"]
    for index, path in enumerate(keep):
        lines += [f"mkdir -p {stage}/{index}", f"mount --bind {q(path)} {stage}/{index}"]
    lines.append(f"mount -t tmpfs -o mode=1777,size={_PRIVATE_SIZE} tmpfs /tmp")
    lines += [f"mount -t tmpfs -o mode=0755,size=1m tmpfs {q(path)}" for path in hidden]
    for index, path in enumerate(keep):
        lines += [f"mkdir -p {q(path)}", f"mount --move {stage}/{index} {q(path)}", f"rmdir {stage}/{index}"]
    lines += [f"mount -o remount,bind,ro {q(path)}" for path in rebinds]
    lines += [f"rmdir {stage}", f"cd {q(sandbox_dir)}"]  # the old cwd is the host's directory, not the bind
    lines += ["PATH=$scrubbed", "unset scrubbed OLDPWD"]  # the harness gets the scrubbed environment as it was
    return "; ".join(lines) + ";"


def outermost(paths: Sequence[str]) -> list[str]:
    """``paths`` without those inside another of them (already visible through it)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == outer or path.startswith(outer.rstrip("/") + "/") for outer in kept):
            kept.append(path)
    return kept
