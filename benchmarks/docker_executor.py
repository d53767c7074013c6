"""The docker executor measured against the subprocess executor (bubblewrap), in one run.

    python benchmarks/docker_executor.py [--batches 10] [--out DIR]

Needs a Docker engine ($DOCKER_HOST; `infra/dockerd.sh` starts one) and bubblewrap.
Prints, in order:

1. the sandbox image (this interpreter, numpy and scipy): the seconds to compute its tag,
   to stream its rootfs into `docker import` (the tag is removed first so the import is
   real), and the image's size as the engine reports it;
2. the cost of one batch, as the parent sees it: a trivial candidate on one case, in a
   fresh bwrap child and in a fresh container, ``--batches`` times each (median and
   max; ratio of the medians);
3. one real `ratchet run evolve` (circle_packing, budget 4, 2 children a round, seed 7,
   2 workers) with each executor, every table compared row by row after dropping the
   wall-clock columns and the one config field that differs (`sandbox.kind`), as the
   fault benchmarks compare runs (`fault_kit.py`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fault_kit import EVOLVE, differences, run_ids, snapshot, start_ratchet, end_ratchet  # also puts ROOT on sys.path

from schemas.configs import SandboxConfig  # noqa: E402
from suites.base import Case  # noqa: E402
from suites.executors import SubprocessExecutor  # noqa: E402
from suites.executors import docker_image  # noqa: E402
from suites.executors.docker import DockerExecutor, docker_command  # noqa: E402

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
TRIVIAL = "def solve():\n    return 1\n"


def measure_image() -> None:
    docker = docker_command()
    started = time.perf_counter()
    tag = docker_image.image_tag()
    tagged = time.perf_counter() - started
    subprocess.run([*docker, "rmi", "-f", tag], capture_output=True)
    started = time.perf_counter()
    docker_image.ensure_image(docker)
    imported = time.perf_counter() - started
    size = int(subprocess.run([*docker, "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True,
                              text=True, check=True).stdout)
    print(f"image {tag}: {len(docker_image.manifest())} files; tag computed in {tagged:.2f} s; rootfs streamed "
          f"into docker import in {imported:.2f} s; image size {size / 1e6:.1f} MB")


def batch_seconds(executor, batches: int) -> list[float]:
    seconds = []
    for _ in range(batches):
        started = time.perf_counter()
        [result] = executor.run(TRIVIAL, RUNNER, "solve", [Case("c", "train", {})])
        seconds.append(time.perf_counter() - started)
        if result.status != "ok":
            raise SystemExit(f"{result.extra.get('isolation')}: the trivial candidate failed: {result.error}")
    return seconds


def measure_batches(batches: int) -> None:
    config = SandboxConfig()
    bwrap = batch_seconds(SubprocessExecutor(config, isolation="bwrap"), batches)
    docker = batch_seconds(DockerExecutor(config), batches)
    for name, seconds in (("bwrap", bwrap), ("docker", docker)):
        print(f"one batch (1 trivial case), {name}: median {statistics.median(seconds):.3f} s, "
              f"max {max(seconds):.3f} s "
              f"over {batches}")
    print(f"docker / bwrap per batch (medians): {statistics.median(docker) / statistics.median(bwrap):.1f}x")


def comparable(tables: dict[str, list[str]]) -> dict[str, list[str]]:
    """The run's tables with `sandbox.kind` dropped from its stored config."""
    status, config = json.loads(tables["runs"][0])
    config["config"]["sandbox"].pop("kind")
    return {**tables, "runs": [json.dumps([status, config])]}


def evolve_run(base: Path, kind: str) -> tuple[dict[str, list[str]], float]:
    store = str(base / kind)
    started = time.monotonic()
    proc = start_ratchet([*EVOLVE, "--seed", "7", "--set", f"sandbox.kind={kind}"], {"RATCHET_STORE": store},
                         base / f"{kind}.log")
    code = end_ratchet(proc)
    elapsed = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"the {kind} run failed (exit {code}); see {base / f'{kind}.log'}")
    (run_id,) = run_ids(store)
    return snapshot(store, run_id), elapsed


def measure_runs(base: Path) -> None:
    reference, reference_s = evolve_run(base, "subprocess")
    contained, contained_s = evolve_run(base, "docker")
    diff = differences(comparable(reference), comparable(contained))
    counts = {table: len(rows) for table, rows in contained.items() if rows}
    print(f"ratchet run evolve, subprocess (bwrap): {reference_s:.1f} s; docker: {contained_s:.1f} s "
          f"({contained_s / reference_s:.2f}x)")
    print(f"rows per table (docker run): {counts}")
    print("every table identical to the subprocess run" if not diff else f"tables that differ (missing, extra): {diff}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None,
                        help="where the two runs' stores and logs go (default: a temp dir)")
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="ratchet-docker-bench-"))
    measure_image()
    measure_batches(args.batches)
    measure_runs(base)
    print(f"stores and logs: {base}")


if __name__ == "__main__":
    main()
