"""Does a round cost the same at round 60 as at round 5?

Runs the real `evolve` flow (Prefect engine, sandboxed subprocess executor, Parquet
store) on the `spin` suite with 1 ms cases, K children per round, for R rounds, records
each round's wall time and prints the ratio of the late rounds' mean to the early
rounds' mean, measured in one run. A loop whose stages read the whole run each round
grows with the round (total cost ~ rounds squared); one whose stages read only their
round plus incrementally kept state stays near 1.

A round's wall time is the time between the progress reports of consecutive rounds
(`tasks.runtime.progress`: every loop reports once per round with "round N" in its
status). For `evolve` the store's part files also give the time per stage (each stage
publishes one part per round, so a part's mtime is that stage's end).

    .venv/bin/python benchmarks/scaling.py                  # 60 rounds of 8 children
    .venv/bin/python benchmarks/scaling.py --rounds 120
    .venv/bin/python benchmarks/scaling.py --loop self_healing --rounds 30
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repository, not benchmarks/ (which has kernels.py)

from cli.env import prepare_environment  # noqa: E402

TARGET = 1.3
WINDOW = 10
EVOLVE_STAGES = ("sample", "execute", "score", "distill", "gate", "register")
_ROUND = re.compile(r"\bround (\d+)\b")


class RoundClock:
    """A progress reporter that stamps the first report of each round."""

    def __init__(self) -> None:
        self.stamps: dict[int, float] = {}

    def start(self, description: str, total: int) -> None:
        self.stamps.clear()

    def advance(self, steps: int, status: str) -> None:
        match = _ROUND.search(status)
        if match:
            self.stamps.setdefault(int(match.group(1)), time.perf_counter())

    def round_times(self) -> dict[int, float]:
        """round -> seconds since the previous round's report (round 0 has none)."""
        rounds = sorted(self.stamps)
        return {r: self.stamps[r] - self.stamps[p] for p, r in zip(rounds, rounds[1:]) if r == p + 1}


@dataclass
class Result:
    loop: str
    rounds: int
    wall_s: float
    round_s: dict[int, float]
    stage_s: dict[int, dict[str, float]] = field(default_factory=dict)

    def windows(self) -> tuple[list[int], list[int]]:
        """Early rounds from round 2 (round 1 pays the warm-up: first imports, first
        sandbox), late rounds ending at the last; 10 each when there are enough."""
        measured = sorted(r for r in self.round_s if r >= 2)
        width = max(1, min(WINDOW, len(measured) // 2))
        return measured[:width], measured[-width:]

    def ratio(self) -> float:
        early, late = self.windows()
        return fmean(self.round_s[r] for r in late) / fmean(self.round_s[r] for r in early)


def make_run_config(loop: str, rounds: int, children: int, ms: float, cases: int, tracking: bool):
    from cli.running import make_config

    params = [f"ms={ms:g}", f"cases={cases}"]
    if loop == "evolve":
        return make_config("evolve", "spin", rounds * children, 0, 1, None, "mutate", 16, params, None, tracking,
                           [f"evolve.children_per_round={children}"])
    return make_config(loop, None, rounds, 0, 1, None, "mutate", 16, [], None, tracking, [])


def run(store_uri: str, loop: str = "evolve", rounds: int = 60, children: int = 8, ms: float = 1.0,
        cases: int = 10, tracking: bool = False, run_id: str | None = None) -> Result:
    """One run of `loop`, timed per round (and, for evolve, per stage). Prefect must be
    set up (``prepare_environment``) beforehand."""
    from flows import LOOPS
    from tasks.runtime.progress import set_reporter

    config = make_run_config(loop, rounds, children, ms, cases, tracking)
    run_id = run_id or f"scaling-{loop}"
    clock = RoundClock()
    set_reporter(clock)
    try:
        start = time.perf_counter()
        LOOPS[loop](config=config, store_uri=store_uri, run_id=run_id)
        wall = time.perf_counter() - start
    finally:
        set_reporter(None)
    result = Result(loop, rounds, wall, clock.round_times())
    if loop == "evolve":
        result.stage_s = evolve_stage_times(store_uri, run_id)
    return result


def evolve_stage_times(store_uri: str, run_id: str) -> dict[int, dict[str, float]]:
    """round -> stage -> seconds, from the mtimes of the parts each stage publishes: a
    stage ends when its part lands, and starts when the stage before it ended."""
    root = Path(store_uri)

    def mtime(path: Path) -> float | None:
        return path.stat().st_mtime if path.exists() else None

    def part(table: str, name: str) -> Path:
        return root / "tables" / table / f"run_id={run_id}" / name

    markers = root / "markers" / f"run_id={run_id}"
    ends: dict[int, dict[str, float | None]] = {}
    for marker in sorted(markers.glob("round-*")):
        r = int(marker.name.removeprefix("round-"))
        key = f"r{r:04d}"
        executions = list((root / "tables" / "executions" / f"run_id={run_id}").glob(f"execute-{key}-*.parquet"))
        ends[r] = {
            "sample": mtime(part("candidates", f"sample-{key}.parquet")),
            "execute": max((p.stat().st_mtime for p in executions), default=None),
            "score": mtime(part("scores", f"score-{key}.parquet")),
            "distill": mtime(part("distillates", f"distill-{key}.parquet")),
            "gate": mtime(part("gate_decisions", f"gate-{key}.parquet")),
            "register": marker.stat().st_mtime,
        }
    times: dict[int, dict[str, float]] = {}
    for r, stage_ends in ends.items():
        if r - 1 not in ends:
            continue
        previous = ends[r - 1]["register"]
        row = {}
        for stage in EVOLVE_STAGES:
            end = stage_ends[stage]
            if end is None:  # a stage with no part this round (no executions): zero time
                row[stage] = 0.0
                continue
            row[stage] = max(0.0, end - previous)
            previous = end
        times[r] = row
    return times


def report(result: Result) -> str:
    early, late = result.windows()
    lines = [
        f"loop {result.loop}: {result.rounds} rounds in {result.wall_s:.1f} s "
        f"(mean round {fmean(result.round_s.values()):.3f} s)",
    ]
    if result.stage_s:
        lines.append(f"{'stage':<9} {'early s/round':>14} {'late s/round':>13} {'late/early':>11}")
        for stage in EVOLVE_STAGES:
            e = fmean(result.stage_s[r][stage] for r in early if r in result.stage_s)
            la = fmean(result.stage_s[r][stage] for r in late if r in result.stage_s)
            lines.append(f"{stage:<9} {e:14.4f} {la:13.4f} {la / e if e > 0 else float('nan'):11.2f}")
    e_mean = fmean(result.round_s[r] for r in early)
    l_mean = fmean(result.round_s[r] for r in late)
    ratio = result.ratio()
    lines.append(f"early rounds {early[0]}-{early[-1]}: {e_mean:.4f} s/round; late rounds {late[0]}-{late[-1]}: "
                 f"{l_mean:.4f} s/round")
    lines.append(f"ratio mean(rounds {late[0]}-{late[-1]}) / mean(rounds {early[0]}-{early[-1]}): {ratio:.3f} "
                 f"(target <= {TARGET}: {'ok' if ratio <= TARGET else 'MISSED'})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loop", default="evolve", choices=["evolve", "self_healing"])
    parser.add_argument("--rounds", type=int, default=60, help="rounds after the seed (evolve budget = rounds x K)")
    parser.add_argument("--children", type=int, default=8, help="children per round (evolve)")
    parser.add_argument("--ms", type=float, default=1.0, help="busy CPU per case, ms (spin's `ms` param)")
    parser.add_argument("--cases", type=int, default=10, help="spin cases (3/4 run per candidate)")
    parser.add_argument("--tracking", action="store_true", help="log candidates to MLflow too (off by default)")
    parser.add_argument("--store", default=None, help="store folder (default: a fresh temporary one)")
    args = parser.parse_args()
    store = args.store or tempfile.mkdtemp(prefix="ratchet-scaling-")
    prepare_environment(store)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    result = run(store, args.loop, args.rounds, args.children, args.ms, args.cases, args.tracking)
    print(report(result))


if __name__ == "__main__":
    main()
