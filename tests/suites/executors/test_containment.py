"""What a hostile candidate can reach under each isolation level, asserted on the host
afterwards: files written to /tmp and /dev/shm, other processes seen in /proc, and
world-readable files of the project and the store copied into its output (which the
parent would store as a blob). bwrap and unshare contain all four; none contains none
of them, as documented (it is only ever run knowingly)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from suites.base import Case

REPO = Path(__file__).resolve().parents[3]
RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
CONTAINED = {"bwrap": True, "unshare": True, "none": False, "docker": True}

PROBE = textwrap.dedent(
    """
    import os

    def solve(writes, reads):
        out = {"written": [], "read": {}}
        for path in writes:
            try:
                with open(path, "w") as handle:
                    handle.write("escaped")
                out["written"].append(path)
            except OSError:
                pass
        for path in reads:
            try:
                with open(path) as handle:
                    out["read"][path] = handle.read(200)
            except OSError:
                pass
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        out["pids"] = pids
        return out
    """
).lstrip()


def world_readable(path: str) -> bool:
    """Whether any user may read the file: `none` runs a root's candidate as nobody, so
    a project cloned into a private folder (mktemp's 0700, as CI's) is out of its reach."""
    target = Path(path)
    return bool(target.stat().st_mode & 0o004) and all(parent.stat().st_mode & 0o001 for parent in target.parents)


@pytest.fixture
def outside_store(monkeypatch):
    """A local store outside /tmp (so only the store rule hides it) with a world-readable
    part, named by RATCHET_STORE as the CLI names a run's store."""
    root = Path(tempfile.mkdtemp(prefix="ratchet-containment-store-", dir="/var/tmp"))
    root.chmod(0o755)
    part = root / "tables" / "scores" / "run_id=r" / "score-r0000.parquet"
    part.parent.mkdir(parents=True)
    for folder in (root / "tables", part.parent.parent, part.parent):
        folder.chmod(0o755)
    part.write_text("the store's scores")
    part.chmod(0o644)
    monkeypatch.setenv("RATCHET_STORE", str(root))
    yield part
    shutil.rmtree(root)


def test_writes_proc_and_exfiltration_under_each_isolation_level(sandboxed, outside_store):
    executor = sandboxed()
    if executor.isolation == "none" and os.geteuid() != 0:
        pytest.skip("isolation none without root runs the candidate as us; nothing of it is contained (documented)")
    tag = uuid.uuid4().hex
    writes = [f"/tmp/ratchet-escape-{tag}", f"/dev/shm/ratchet-escape-{tag}"]
    reads = [str(REPO / "suites" / "reference" / "bin_packing" / "binpack1.txt"), str(REPO / "suites" / "base.py"),
             str(outside_store)]
    try:
        [result] = executor.run(PROBE, RUNNER, "solve", [Case("c", "train", {"writes": writes, "reads": reads})])
        landed = [path for path in writes if os.path.exists(path)]
    finally:
        for path in writes:
            Path(path).unlink(missing_ok=True)
    assert result.status == "ok", result.error
    output = result.output if isinstance(result.output, dict) else json.loads(result.output)
    contained = CONTAINED[executor.isolation]
    assert landed == ([] if contained else writes)  # on the host, after the sandbox is gone
    assert (os.getpid() in output["pids"]) is not contained  # the parent (this test) seen in /proc
    assert (len(output["pids"]) <= 3) is contained  # inside: its own pid namespace (init, harness)
    copied = [path for path in reads if path in output["read"]]
    assert copied == ([] if contained else [path for path in reads if world_readable(path)])
    assert contained or str(outside_store) in copied  # the store's world-readable part: never vacuous
    assert result.extra["isolation"] == executor.isolation
