"""Starting the harness in an isolated child process, and killing all it started.

Isolation levels, strongest first. ``auto`` (the default) is bubblewrap, probed once per
process, or a SandboxError that says how to install it: it never falls back silently.
The executor's ``isolation`` argument, or the environment variable
``RATCHET_SANDBOX_ISOLATION=bwrap|unshare|none``, forces one; a forced level that does
not work here is a SandboxError, and a forced weaker one warns once per process.

- ``bwrap`` (bubblewrap): new pid, network, ipc and uts namespaces (and a user
  namespace unless we are root, see ``_namespace_argv``), and a new, read-only root
  that holds only read-only binds of what Python needs (/usr and the /lib links,
  ld.so.cache, the interpreter's prefix, this environment's site-packages) plus the
  sandbox directory, the one writable place. Nothing else of the host exists inside: not
  the data directory, not the store (``.ratchet``), not the suites' scorer sources, not
  the rest of /tmp. The network namespace has only a loopback no one listens on.
- ``unshare`` (util-linux, when bubblewrap is missing): ``unshare --mount --pid --fork
  --mount-proc --net``: no network, its own pid namespace and ``/proc`` (no host command
  lines), and its own mount namespace in which ``/tmp`` and ``/dev/shm`` are fresh
  private tmpfs mounts (nothing written there reaches the host) and the project (the
  suites' scorer sources and reference data), the shared folder beside it and a local
  store (``$RATCHET_STORE``) are each covered by an empty tmpfs; the sandbox directory
  and the interpreter's directories are bound back in (``_unshare_script``). Unlike
  bwrap, the rest of the host's file system stays visible (read-only to the sandbox uid
  where file permissions say so), so ``auto`` never picks it.
- ``none``: a plain child: rlimits, the uid drop, the scrubbed environment and the
  process-group kill (as root, also a sweep of the child's uid). Without root, a
  grandchild that calls setsid() escapes the kill.

When the parent is root, the harness drops to a fresh uid (drawn per child from a range
that no account uses) before any candidate code exists. RLIMIT_NPROC then applies (the
kernel does not enforce it for root) and counts per sandbox, root-only files are
unreadable, and two sandboxes cannot touch each other's files. Without root the
candidate keeps the parent's uid: under bwrap the user namespace still counts processes
per sandbox; under unshare and none the user's own files outside the hidden folders
are readable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import select
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import IO, Literal

from suites.executors.base import SandboxError
from suites.executors.unshare import hidden_paths, outermost, under, unshare_script

Isolation = Literal["bwrap", "unshare", "none"]
ISOLATION_ENV = "RATCHET_SANDBOX_ISOLATION"
_NAMES: dict[str, Isolation] = {"bwrap": "bwrap", "unshare": "unshare", "unshare-net": "unshare", "none": "none"}
_TOOLS = {"bwrap": "bwrap", "unshare": "unshare"}
_SH = shutil.which("sh") or "/bin/sh"

PYTHON_FLAGS = ("-s", "-S", "-P", "-B")
"""Not ``-I``: it would also ignore PYTHONHASHSEED. ``-s -P`` are its isolating half (no
user site-packages, no script directory on sys.path); ``-S`` skips ``site``, so the
environment's .pth files (an editable install would put the repository, scorers
included, on sys.path) do not run; the harness appends the site-packages directories."""

_UID_BASE, _UID_SPAN = 0x7D000000, 1 << 24
_LIB_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_PROBE_TIMEOUT_S = 30.0
_KILL_WAIT_S = 5.0


def resolve_isolation(requested: str | None = None) -> Isolation:
    """The isolation to use: ``requested``, else $RATCHET_SANDBOX_ISOLATION, else auto.
    Auto is bubblewrap or a refusal: a weaker level (which leaves the host's files, /tmp
    and /proc to the candidate) runs only when asked for by name, with a warning."""
    name = requested or os.environ.get(ISOLATION_ENV) or "auto"
    if name == "auto":
        problem = _probe("bwrap")
        if problem is not None:
            raise SandboxError(
                f"no bubblewrap sandbox here ({problem}): install it (apt-get install bubblewrap) to run candidate "
                f"code contained, or set {ISOLATION_ENV}=unshare (no network, private /tmp, /dev/shm and /proc, "
                "the project and the store hidden, but the rest of the host's files visible) or none, knowingly"
            )
        return "bwrap"
    if name not in _NAMES:
        raise SandboxError(
            f"sandbox isolation {name!r} (argument or ${ISOLATION_ENV}) is not one of auto, bwrap, unshare, none"
        )
    problem = _probe(_NAMES[name])
    if problem is not None:
        raise SandboxError(f"sandbox isolation {_NAMES[name]!r} was requested but does not work here: {problem}")
    if _NAMES[name] != "bwrap":
        _warn_weaker(_NAMES[name])
    return _NAMES[name]


@functools.lru_cache(maxsize=None)
def _warn_weaker(isolation: Isolation) -> None:
    """Once per process: the candidate runs with less than bubblewrap's containment."""
    what = ("the host's world-readable files outside the project and the store" if isolation == "unshare"
            else "the host's world-readable files, /tmp, /dev/shm and every process's command line")
    warnings.warn(f"sandbox isolation {isolation!r} (set by {ISOLATION_ENV} or the executor) is weaker than "
                  f"bubblewrap: candidate code can read {what}", RuntimeWarning, stacklevel=3)


@functools.lru_cache(maxsize=None)
def _probe(isolation: Isolation) -> str | None:
    """None when ``isolation`` works on this machine, else why not (runs ``true`` in
    the namespaces once per process)."""
    if isolation == "none":
        return None
    tool = shutil.which(_TOOLS[isolation])
    if tool is None:
        package = "bubblewrap" if isolation == "bwrap" else "util-linux"
        return f"{_TOOLS[isolation]} is not on PATH (Debian package {package})"
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="ratchet-probe-") as probe_dir:
        if isolation == "bwrap":
            argv = _namespace_argv(isolation, tool) + ["--ro-bind", "/", "/", true]
        else:  # every mount the sandbox makes, around a throwaway sandbox directory
            script = unshare_script(probe_dir, hidden_paths(), []) + " exit 0"
            argv = _namespace_argv(isolation, tool) + [_SH, "-c", script]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(argv)}` did not finish within {_PROBE_TIMEOUT_S:g} s"
    if done.returncode != 0:
        return f"`{' '.join(argv)}` exited with {done.returncode}: {done.stderr.decode(errors='replace').strip()}"
    return None


def _namespace_argv(isolation: Isolation, tool: str) -> list[str]:
    """The namespace-creating prefix of the command line. As root there is no user
    namespace: inside one, the harness could not switch to an unmapped sandbox uid, and
    a mapped root would still be the host's root, for whom RLIMIT_NPROC does not count."""
    root = os.geteuid() == 0
    if isolation == "bwrap":
        spaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        return [tool, *(spaces if root else ["--unshare-all"]), "--die-with-parent", "--new-session"]
    return [tool, *([] if root else ["--map-root-user"]), "--mount", "--propagation", "private", "--pid", "--fork",
            "--mount-proc", "--net", "--kill-child"]


def _unshare_plan(python: _Python, sandbox_dir: str, script: list[str]) -> LaunchPlan:
    """The ``unshare`` launch: the mount script, then the interpreter. As root, the
    interpreter's folders outside the hidden ones are reached through descriptors (see
    ``plan_launch``); those inside are bound back at their own paths."""
    hidden = hidden_paths()
    folders = [python.prefix, *python.site_dirs]
    rebinds = outermost([p for p in folders if under(p, hidden)])
    fds, paths = [], []
    for path in folders:
        if os.geteuid() == 0 and not under(path, hidden):
            fds.append(os.open(path, os.O_PATH | os.O_DIRECTORY))
            path = f"/proc/self/fd/{fds[-1]}"
        paths.append(path)
    init = unshare_script(sandbox_dir, hidden, rebinds) + ' exec "$@"'
    argv = [*_namespace_argv("unshare", shutil.which("unshare") or "unshare"), _SH, "-c", init, "sh",
            f"{paths[0]}/{python.executable}", *script]
    return LaunchPlan(argv, paths[1:], fds)


@dataclass(frozen=True)
class _Python:
    """Where this interpreter lives: the prefix to bind, the executable relative to it,
    and the site-packages directories (numpy, scipy) the harness appends to sys.path."""

    prefix: str
    executable: str
    site_dirs: tuple[str, ...]


@functools.lru_cache(maxsize=None)
def _python() -> _Python:
    """This interpreter's layout. The child runs the base interpreter (not a venv's
    symlink to it) and gets the venv's site-packages appended by the harness."""
    prefix = os.path.realpath(sys.base_prefix)
    executable = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    if not executable.startswith(prefix + os.sep):
        raise SandboxError(
            f"the interpreter {executable} lies outside its prefix {prefix}, which is all of it the sandbox binds"
        )
    site_dirs = tuple(dict.fromkeys(os.path.realpath(p) for p in site.getsitepackages() if os.path.isdir(p)))
    return _Python(prefix, os.path.relpath(executable, prefix), site_dirs)


def sandbox_uid() -> int | None:
    """A fresh uid for one child when we are root (see the module docstring), else None."""
    return _UID_BASE + secrets.randbelow(_UID_SPAN) if os.geteuid() == 0 else None


def scrubbed_env(sandbox_dir: str) -> dict[str, str]:
    """The child's whole environment: nothing of ours (credentials, RATCHET_*, MLFLOW_*)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": sandbox_dir,
        "TMPDIR": sandbox_dir,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


@dataclass
class LaunchPlan:
    """One child's command line, the sys.path entries the harness appends, and the
    descriptors the plan opened for the child (closed here once it started)."""

    argv: list[str]
    sys_path: list[str]
    fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def plan_launch(isolation: Isolation, sandbox_dir: str, results_fd: int) -> LaunchPlan:
    """How to run ``harness.py`` in ``sandbox_dir`` under ``isolation``.

    Without bwrap, a root parent's child reaches the interpreter and its libraries
    through descriptors opened here (``/proc/self/fd/N``, which a process may always
    follow): after the harness drops root, a prefix under a directory only root may
    enter (pyenv under /root) would otherwise be unreachable for later imports."""
    python = _python()
    interpreter = os.path.join(python.prefix, python.executable)
    script = [*PYTHON_FLAGS, os.path.join(sandbox_dir, "harness.py"), str(results_fd)]
    if isolation == "bwrap":
        argv = _bwrap_argv(python, sandbox_dir)
        return LaunchPlan([*argv, "--", interpreter, *script], list(python.site_dirs))
    if isolation == "unshare":
        return _unshare_plan(python, sandbox_dir, script)
    if os.geteuid() != 0:
        return LaunchPlan([interpreter, *script], list(python.site_dirs))
    fds = [os.open(path, os.O_PATH | os.O_DIRECTORY) for path in (python.prefix, *python.site_dirs)]
    paths = [f"/proc/self/fd/{fd}" for fd in fds]
    return LaunchPlan([f"{paths[0]}/{python.executable}", *script], paths[1:], fds)


def _bwrap_argv(python: _Python, sandbox_dir: str) -> list[str]:
    """The bwrap command up to the interpreter: a fresh root (a tmpfs, made read-only
    last) holding /proc, a minimal /dev, read-only binds of what Python needs at their
    host paths (so that the interpreter finds its prefix unchanged), and the sandbox
    directory as the one writable bind."""
    argv = _namespace_argv("bwrap", shutil.which("bwrap") or "bwrap") + ["--proc", "/proc", "--dev", "/dev"]
    created = {"/"}
    for top in _LIB_LINKS:
        if os.path.islink(top):
            argv += _parents(top, created) + ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += _bind("--ro-bind", top, created)
    for path in _ETC_FILES:
        if os.path.islink(path):
            argv += _parents(path, created) + ["--symlink", os.readlink(path), path]
        elif os.path.isfile(path):
            argv += _bind("--ro-bind", path, created)
    for path in outermost(["/usr", python.prefix, *python.site_dirs]):
        argv += _bind("--ro-bind", path, created)
    argv += _bind("--bind", sandbox_dir, created)
    return argv + ["--chdir", sandbox_dir, "--remount-ro", "/"]


def _parents(path: str, created: set[str]) -> list[str]:
    """Create the missing parents of ``path`` world-traversable: bwrap would make them
    0700, which the sandbox uid could not enter."""
    argv: list[str] = []
    parts = path.strip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        parent = "/" + "/".join(parts[:depth])
        if parent not in created:
            argv += ["--perms", "0755", "--dir", parent]
            created.add(parent)
    return argv


def _bind(flag: str, path: str, created: set[str]) -> list[str]:
    """Bind ``path`` at the same place inside."""
    argv = _parents(path, created) + [flag, path, path]
    created.add(path)
    return argv


def start(
    plan: LaunchPlan, sandbox_dir: str, results_fd: int, stdout: IO[bytes], stderr: IO[bytes],
    stdin: int = subprocess.DEVNULL,
) -> subprocess.Popen:
    """Start the child as leader of a new session (so that its process group can be
    killed) with the scrubbed environment; ``stdin`` is where the harness reads its work."""
    try:
        return subprocess.Popen(
            plan.argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=sandbox_dir,
            env=scrubbed_env(sandbox_dir),
            pass_fds=(*plan.fds, results_fd),
            start_new_session=True,
        )
    except OSError as exc:
        raise SandboxError(f"could not start the sandbox `{plan.argv[0]}`: {exc}") from exc


def has_exited(pidfd: int) -> bool:
    """Whether the process behind ``pidfd`` has ended (without reaping it)."""
    return bool(select.select([pidfd], [], [], 0)[0])


def stop(proc: subprocess.Popen, pidfd: int, isolation: Isolation, uid: int | None) -> None:
    """SIGKILL everything the child started, and return once it is gone.

    A namespace's init (bwrap's, or the harness under unshare) takes its whole pid
    namespace with it, setsid() or not. It is killed first and the child, its parent,
    is given time to reap it and exit, so that no zombie is left to the host's init.
    The process group then covers the child and any descendant still in it; without a
    pid namespace, a per-child ``uid`` also finds the descendants that left the group."""
    init = None if isolation == "none" or has_exited(pidfd) else _namespace_init(proc.pid)
    if init is not None:
        with contextlib.suppress(ProcessLookupError):  # exited and reaped meanwhile: namespace gone
            signal.pidfd_send_signal(init, signal.SIGKILL)
        select.select([pidfd], [], [], _KILL_WAIT_S)
        os.close(init)
    with contextlib.suppress(ProcessLookupError):  # the whole group had already exited
        os.killpg(proc.pid, signal.SIGKILL)  # the group id stays ours until proc is reaped below
    proc.wait()
    if isolation == "none" and uid is not None:
        _kill_uid(uid)


def _kill_uid(uid: int) -> None:
    """SIGKILL every live process of ``uid`` until none is left. Each sweep kills all
    it sees, including the parents of anything forked meanwhile, and RLIMIT_NPROC
    bounds how many there can be, so the sweeps end."""
    while victims := _live_processes_of(uid):
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue  # exited by itself meanwhile


def _live_processes_of(uid: int) -> list[int]:
    """Pids whose real uid is ``uid``, zombies excluded. Read from /proc/<pid>/status:
    a process that dropped root is not dumpable, so its /proc directory belongs to root."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:  # it exited while we looked
            continue
        if fields["Uid"].split()[0] == str(uid) and not fields["State"].strip().startswith(("Z", "X")):
            found.append(int(entry.name))
    return found


def _namespace_init(pid: int) -> int | None:
    """A pidfd of the child's only child, the init of its pid namespace; None where the
    kernel does not list children or it has just exited."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = handle.read().split()
        return os.pidfd_open(int(children[0])) if children else None
    except (OSError, ValueError):
        return None
