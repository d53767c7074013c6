"""What the executor tests look for after a child: its processes."""

from __future__ import annotations

import os
from pathlib import Path


def sandbox_processes(root: str) -> list[int]:
    """Live processes whose command line names ``root`` (bwrap, unshare, the harness and
    every fork of it carry their sandbox directory in argv) or whose mounts do (inside a
    container argv names /sandbox, but the bind's source is a directory under ``root``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                mounts = (entry / "mountinfo").read_bytes()
            except OSError:  # exited while we looked
                continue
            if root.encode() in cmdline or os.path.basename(root).encode() in mounts:
                found.append(int(entry.name))
    return found
