"""The CPU clocks of a sandbox: what its candidate's time limits are measured on.

- ``tree_cpu_s``: user + system time of a process tree, read from /proc (the subprocess
  executor's child, its launcher, every fork and thread; the reaped ones through their
  parents' cutime/cstime). The candidate cannot forge it.
- ``ContainerClock``: the CPU time of a container's cgroup (every process that ever ran
  in it), for the docker executor, whose processes are the engine's children, not ours.
"""

from __future__ import annotations

import os
import select

from suites.executors.base import SandboxError

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_HAS_CHILDREN_FILE = os.path.exists(f"/proc/self/task/{os.getpid()}/children")  # CONFIG_PROC_CHILDREN
CGROUP_FILES = (
    # (file, seconds per unit) where a container's CPU time may be, by cgroup version and driver
    ("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage", 1e-9),  # cgroup v1, cgroupfs driver
    ("/sys/fs/cgroup/cpu,cpuacct/docker/{id}/cpuacct.usage", 1e-9),
    ("/sys/fs/cgroup/docker/{id}/cpu.stat", 1e-6),  # cgroup v2: usage_usec
    ("/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat", 1e-6),
)


def tree_cpu_s(root_pid: int) -> float:
    """User + system CPU seconds of ``root_pid`` and all its live descendants, each with
    its reaped children's (cutime, cstime), read from /proc. A process that ends
    meanwhile is skipped (its time moves to its parent's cutime when reaped)."""
    ticks = 0
    stack = [root_pid]
    children = _children_map() if not _HAS_CHILDREN_FILE else None
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
            fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) "; comm may hold anything
            ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
            if children is not None:
                stack += children.get(pid, ())
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                    stack += [int(child) for child in handle.read().split()]
        except (OSError, ValueError, IndexError):
            continue  # it ended while we looked
    return ticks / _CLK_TCK


def _children_map() -> dict[int, list[int]]:
    """Every process's children by parent pid, from a scan of /proc (for kernels
    without /proc/PID/task/TID/children)."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    stat = handle.read()
                parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            found.setdefault(parent, []).append(int(entry.name))
    return found


class ContainerClock:
    """CPU seconds the container's cgroup used so far (the last value read once it is
    gone). The container id comes from the client's --cidfile; a running container
    whose cgroup is in none of the known places is a SandboxError, never an unlimited
    candidate. Read only once the harness is ready, so the container exists then."""

    def __init__(self, cidfile: str, client_pidfd: int, places: tuple[tuple[str, float], ...] = CGROUP_FILES) -> None:
        self.cidfile = cidfile
        self.client_pidfd = client_pidfd
        self.places = places
        self.path: tuple[str, float] | None = None
        self.last = 0.0

    def _find(self) -> tuple[str, float] | None:
        try:
            with open(self.cidfile) as handle:
                container_id = handle.read().strip()
        except FileNotFoundError:
            return None
        for pattern, scale in self.places:
            path = pattern.format(id=container_id)
            if container_id and os.path.exists(path):
                return path, scale
        return None

    def __call__(self) -> float:
        if self.path is None:
            self.path = self._find()
            if self.path is None:
                if select.select([self.client_pidfd], [], [], 0)[0]:
                    return self.last  # the container already ended
                raise SandboxError(
                    f"the cgroup of the container in {self.cidfile} is in none of the places known "
                    f"({', '.join(p for p, _ in self.places)}), so its CPU time cannot be limited"
                )
        path, scale = self.path
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError:
            return self.last  # the container ended; its cgroup is gone
        if path.endswith("cpu.stat"):
            text = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec"))
        self.last = int(text) * scale
        return self.last
