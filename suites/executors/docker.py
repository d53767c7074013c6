"""The ``docker`` executor: the subprocess executor's harness and protocol, in a container.

Each batch runs in a fresh container of the offline sandbox image (``docker_image.py``):

    docker run --rm --pull=never --init --network none --read-only --tmpfs /tmp:size=64m,noexec,nosuid,nodev
      --memory M --memory-swap M --cpus 1 --cpuset-cpus OURS --pids-limit P --user UID:UID --cap-drop ALL
      --security-opt no-new-privileges --log-driver none -v SANDBOX_DIR:/sandbox ...

with the sandbox directory (request.json, harness.py, stdout.txt, stderr.txt, and a FIFO
for the results, since no descriptor can be passed into a container) as the one
writable bind, and the scrubbed environment. The harness inside applies the same
rlimits, so a case's fate is decided as under bubblewrap: CPU time measured by the
parent, here from the container's own cgroup (every process in it, reaped or not), so
neither the engine's start-up nor a busy machine counts against the candidate; the same
wall-clock backstops; the same results lines (``transcript.py``), so the rows are the
same in shape, with ``extra["executor"] = extra["isolation"] = "docker"``. The
candidate's uid is fresh per container when we are root (as ``sandbox.py`` draws it),
else our own. Past a limit, ``docker kill`` ends the container and with it every
process inside; ``--rm`` removes it. ``--pull=never``: an image missing from the engine
is an error at once, never an attempt to reach a registry. ``--cpuset-cpus`` is this
process's CPU affinity, which a subprocess child would inherit (a run pinned with
``taskset`` keeps its candidates on its cores).

The engine is the one ``$DOCKER_HOST`` names (the docker CLI's default otherwise);
``infra/dockerd.sh`` starts one on a machine without systemd. No engine answering is a
SandboxError that says how to start one.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import tempfile
from typing import IO

from schemas.configs import SandboxConfig
from suites.executors.base import SandboxError
from suites.executors.cpu_clock import ContainerClock
from suites.executors.docker_image import SANDBOX_DIR, ensure_image, layout
from suites.executors.sandbox import PYTHON_FLAGS, sandbox_uid, scrubbed_env
from suites.executors.channel import write_sandbox_files
from suites.executors.subprocess import Child, SubprocessExecutor

TMPFS_MB = 64
"""Size of the container's /tmp (a tmpfs in its memory, so counted in --memory)."""
CPUS = 1.0
"""--cpus of a container: the candidate's CPU time can grow at most as fast as wall time."""
_PROBE_TIMEOUT_S = 20.0
_KILL_TIMEOUT_S = 30.0
_START_HINT = (
    "start one with `sudo infra/dockerd.sh` and `export DOCKER_HOST=unix:///tmp/dockerd/docker.sock` "
    "(or `systemctl start docker`), or run with --set sandbox.kind=subprocess"
)


def docker_command() -> list[str]:
    """The docker CLI, or a SandboxError naming the package."""
    tool = shutil.which("docker")
    if tool is None:
        raise SandboxError(f"the docker executor needs the docker CLI on PATH (Debian package docker.io); "
                           f"{_START_HINT}")
    return [tool]


@functools.lru_cache(maxsize=None)
def _engine_version(docker: tuple[str, ...], host: str | None) -> str:
    """The engine's version (once per process and engine), or a SandboxError."""
    argv = [*docker, "version", "--format", "{{.Server.Version}}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"the Docker engine at {host or 'the default socket'} did not answer within "
                           f"{_PROBE_TIMEOUT_S:g} s; {_START_HINT}") from None
    if done.returncode != 0 or not done.stdout.strip():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
        raise SandboxError(f"no Docker engine answers at {host or 'the default socket'} ({why}); {_START_HINT}")
    return done.stdout.strip()


@functools.lru_cache(maxsize=None)
def _image(docker: tuple[str, ...], host: str | None) -> str:
    try:
        return ensure_image(list(docker))
    except (OSError, RuntimeError) as exc:
        raise SandboxError(f"the docker sandbox image could not be built: {exc}") from exc


class DockerExecutor(SubprocessExecutor):
    """Runs untrusted candidates in containers (see the module docstring). ``tmp_root``
    is where the per-container sandbox directories are made; the engine must be able to
    bind them (it runs on this machine)."""

    name = "docker"

    def __init__(self, config: SandboxConfig = SandboxConfig(), *, tmp_root: str | None = None) -> None:
        self.config = config
        self.isolation = "docker"
        self.prestart = False  # a container takes its whole request at launch
        self.tmp_root = os.path.realpath(tmp_root or tempfile.gettempdir())
        self.docker = docker_command()
        host = os.environ.get("DOCKER_HOST")
        self.engine_version = _engine_version(tuple(self.docker), host)
        self.image = _image(tuple(self.docker), host)

    def _launch(self, sandbox_dir: str, prelude: dict, request: dict | None, out: IO[bytes], err: IO[bytes]) -> Child:
        uid = sandbox_uid() or os.getuid()
        fifo = os.path.join(sandbox_dir, "results.fifo")
        os.mkfifo(fifo, 0o600)
        request = {**prelude, **(request or {}), "sys_path": [layout().site_packages], "drop_to": None}
        write_sandbox_files(sandbox_dir, request)
        if os.geteuid() == 0:
            for path in (sandbox_dir, fifo, out.name, err.name):
                os.chown(path, uid, uid)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: not readable until the harness opens it
        name = f"ratchet-sbx-{secrets.token_hex(8)}"
        cid_dir = tempfile.mkdtemp(prefix="ratchet-cid-", dir=self.tmp_root)  # ours alone (0700), not bound in
        cidfile = os.path.join(cid_dir, "cid")
        argv = self._argv(sandbox_dir, name, cidfile, uid)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        except OSError as exc:
            os.close(read_fd)
            shutil.rmtree(cid_dir)
            raise SandboxError(f"could not start `{argv[0]}`: {exc}") from exc
        pidfd = os.pidfd_open(proc.pid)

        def stop_child() -> None:
            try:
                self._stop(proc, pidfd, name)
            finally:
                os.close(pidfd)
                os.close(read_fd)
                shutil.rmtree(cid_dir)

        return Child(proc, read_fd, pidfd, ContainerClock(cidfile, pidfd), stop_child)

    def _argv(self, sandbox_dir: str, name: str, cidfile: str, uid: int) -> list[str]:
        config = self.config
        memory = f"{config.memory_mb + TMPFS_MB}m"
        env = [f"--env={key}={value}" for key, value in scrubbed_env(SANDBOX_DIR).items()]
        inside = [os.path.join(SANDBOX_DIR, f) for f in ("harness.py", "results.fifo", "stdout.txt", "stderr.txt")]
        cpuset = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))  # ours, as a child would inherit
        return [
            *self.docker, "run", "--rm", "--pull=never", "--init", f"--name={name}", f"--cidfile={cidfile}",
            "--network=none", "--read-only", f"--tmpfs=/tmp:rw,size={TMPFS_MB}m,noexec,nosuid,nodev",
            f"--memory={memory}", f"--memory-swap={memory}", f"--cpus={CPUS:g}", f"--cpuset-cpus={cpuset}",
            f"--pids-limit={config.max_processes + 1}",  # + docker-init
            f"--user={uid}:{uid}", "--cap-drop=ALL", "--security-opt=no-new-privileges", "--log-driver=none",
            f"--mount=type=bind,source={sandbox_dir},target={SANDBOX_DIR}", f"--workdir={SANDBOX_DIR}",
            *env, self.image, layout().executable, *PYTHON_FLAGS, *inside,
        ]

    def _stop(self, proc: subprocess.Popen, pidfd: int, name: str) -> None:
        """Kill the container unless it ended, and wait for the client (which, with
        --rm, returns once the engine has removed it). A client that was itself killed
        left its container to the engine, so that one is removed by force."""
        if proc.poll() is None:
            subprocess.run([*self.docker, "kill", name], capture_output=True, timeout=_KILL_TIMEOUT_S)
        elif proc.returncode < 0:
            subprocess.run([*self.docker, "rm", "--force", name], capture_output=True, timeout=_KILL_TIMEOUT_S)
        try:
            proc.wait(timeout=_KILL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise SandboxError(f"the docker client of container {name} did not exit {_KILL_TIMEOUT_S:g} s after "
                               "the container was killed") from None
