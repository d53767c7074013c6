"""What only the docker executor has: its engine check, the container's lock-down seen
from inside, containers removed afterwards, and the image's reproducible build. The
hostile-candidate tests it shares with the subprocess executor run it as the ``docker``
level of the ``sandboxed`` fixture (test_subprocess*.py, test_containment.py,
test_output_bounds.py)."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
import textwrap

import pytest

from schemas.configs import SandboxConfig
from suites.base import Case
from suites.executors import SandboxError, make_executor
from suites.executors import docker_image
from suites.executors.docker import DockerExecutor

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
needs_cli = pytest.mark.skipif(shutil.which("docker") is None,
                               reason="no docker CLI on PATH (Debian package docker.io)")


@pytest.fixture
def docker_executor(sandbox_root):
    def make(**limits) -> DockerExecutor:
        return DockerExecutor(SandboxConfig(**{"timeout_s": 2.0, **limits}), tmp_root=sandbox_root)

    try:
        make()
    except SandboxError as exc:
        pytest.skip(f"no Docker engine here: {exc}")
    return make


@needs_cli
def test_no_engine_is_one_line_that_says_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    with pytest.raises(SandboxError) as caught:
        make_executor(SandboxConfig(kind="docker"))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"no Docker engine answers at unix://{tmp_path}/no-such-docker.sock (")
    assert "infra/dockerd.sh" in message and "sandbox.kind=subprocess" in message


LOCKDOWN = textwrap.dedent(
    """
    import os

    def attempt(action):
        try:
            action()
            return "allowed"
        except OSError as exc:
            return type(exc).__name__ + ":" + str(exc.errno)

    def write(path):
        with open(path, "w") as handle:
            handle.write("x")

    def run_from_tmp():
        write("/tmp/tool")
        os.chmod("/tmp/tool", 0o755)
        os.execv("/tmp/tool", ["/tmp/tool"])

    def solve():
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        return {
            "uid": os.getuid(),
            "cap_eff": status["CapEff"].strip(),
            "no_new_privs": status["NoNewPrivs"].strip(),
            "write_root": attempt(lambda: write("/usr/escape")),
            "write_tmp": attempt(lambda: write("/tmp/scratch")),
            "exec_tmp": attempt(run_from_tmp),
            "interfaces": sorted(os.listdir("/sys/class/net")),
            "pids_max": open("/sys/fs/cgroup/pids/pids.max").read().strip(),
            "memory_max": open("/sys/fs/cgroup/memory/memory.limit_in_bytes").read().strip(),
            "cwd": os.getcwd(),
        }
    """
).lstrip()


@pytest.mark.integration
def test_the_container_is_locked_down_as_the_run_line_says(docker_executor):
    executor = docker_executor(memory_mb=256, max_processes=16)
    [result] = executor.run(LOCKDOWN, RUNNER, "solve", [Case("c", "train", {})])
    assert result.status == "ok", result.error
    seen = result.output
    assert seen["uid"] != 0
    assert seen["cap_eff"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert seen["write_root"] == "OSError:30"  # EROFS: --read-only
    assert seen["write_tmp"] == "allowed"
    assert seen["exec_tmp"] == "PermissionError:13"  # --tmpfs /tmp:noexec
    assert seen["interfaces"] == ["lo"]  # --network none
    assert seen["pids_max"] == "17"  # max_processes + docker-init
    assert seen["memory_max"] == str((256 + 64) * 1024 * 1024)  # memory_mb + the /tmp tmpfs
    assert seen["cwd"] == "/sandbox"


def _sandbox_containers(executor: DockerExecutor) -> list[str]:
    done = subprocess.run([*executor.docker, "ps", "-a", "-q", "--filter", "name=ratchet-sbx-"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.integration
def test_containers_are_removed_after_a_batch_and_after_a_kill(docker_executor):
    executor = docker_executor(timeout_s=0.5)
    before = _sandbox_containers(executor)
    source = "def solve(spin):\n    while spin:\n        pass\n    return 1\n"
    batch = [Case("a", "train", {"spin": True}), Case("b", "train", {"spin": False})]
    results = executor.run(source, RUNNER, "solve", batch)
    assert [r.status for r in results] == ["timeout", "ok"]
    assert "CPU-time limit of 0.5 s" in results[0].error
    assert _sandbox_containers(executor) == before


@pytest.mark.slow
def test_the_image_is_reproducible_and_tagged_by_its_inputs():
    first, second = io.BytesIO(), io.BytesIO()
    docker_image.write_rootfs(first)
    docker_image.write_rootfs(second)
    assert hashlib.sha256(first.getvalue()).digest() == hashlib.sha256(second.getvalue()).digest()
    tag = docker_image.image_tag()
    docker_image.image_tag.cache_clear()
    assert docker_image.image_tag() == tag
    assert tag.startswith("ratchet-sandbox:") and len(tag.split(":")[1]) == 16
    with tarfile.open(fileobj=io.BytesIO(first.getvalue())) as archive:
        members = archive.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names, key=lambda n: "/" + n)
    assert {(m.mtime, m.uid, m.gid) for m in members} == {(0, 0, 0)}
    where = docker_image.layout()
    assert where.executable.lstrip("/") in names
    for package in ("numpy", "scipy"):
        assert f"{where.site_packages.lstrip('/')}/{package}/__init__.py" in names
    assert not any("/tests/" in n or "/test/" in n for n in names)
    assert {m.name: m.mode for m in members}["tmp"] == 0o1777  # docker's --tmpfs /tmp takes this mode


@pytest.mark.integration
def test_what_the_suites_import_works_in_the_image(docker_executor):
    """circle_packing's seed solves a linear program with scipy (which imports numpy.testing
    and so unittest): max x + y subject to x + 2y <= 4, 3x + y <= 6, x, y >= 0 is at (1.6, 1.2)."""
    source = textwrap.dedent(
        """
        import numpy as np
        from scipy.optimize import linprog

        def solve():
            found = linprog(c=[-1, -1], A_ub=[[1, 2], [3, 1]], b_ub=[4, 6], bounds=[(0, None), (0, None)])
            return [round(float(v), 6) for v in found.x] + [float(np.sum(np.arange(5)))]
        """
    ).lstrip()
    [result] = docker_executor(timeout_s=10.0).run(source, RUNNER, "solve", [Case("c", "train", {})])
    assert (result.status, result.output) == ("ok", [1.6, 1.2, 10.0]), result.error


@pytest.mark.integration
def test_a_memory_bomb_spread_over_processes_meets_the_container_limit(docker_executor):
    """Each of four forks stays under RLIMIT_AS (256 MiB) with 200 MiB, but together they
    would exceed the container's --memory (256 + 64 MiB): the kernel's OOM killer SIGKILLs
    forks until the rest fit, so at most one of them (320 // 200) lives to exit by itself."""
    source = textwrap.dedent(
        """
        import os, time

        def solve():
            children = []
            for _ in range(4):
                pid = os.fork()
                if pid == 0:
                    block = bytearray(200 * 1024 * 1024)
                    for i in range(0, len(block), 4096):
                        block[i] = 1
                    time.sleep(3)
                    os._exit(0)
                children.append(pid)
            return sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children)
        """
    ).lstrip()
    executor = docker_executor(memory_mb=256, max_processes=16, timeout_s=5.0)
    [result] = executor.run(source, RUNNER, "solve", [Case("a", "train", {})])
    assert result.status == "ok", result.error
    assert len(result.output) == 4 and set(result.output) <= {0, -9}
    assert result.output.count(0) <= 1, result.output


@pytest.mark.integration
def test_an_image_missing_from_the_engine_is_our_error_without_a_pull(docker_executor):
    executor = docker_executor()
    executor.image = "ratchet-sandbox:0000000000000000"  # as if removed after the check
    with pytest.raises(SandboxError, match="the sandbox harness did not start .*No such image: ratchet-sandbox:0{16}"):
        executor.run("def solve():\n    return 1\n", RUNNER, "solve", [Case("c", "train", {})])
