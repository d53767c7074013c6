"""Behaviour snapshot: run a fixed set of loops at tiny budgets and write, per loop, the
candidate ids by round and every gate decision, so a refactor can prove that the same
loop, suite, budget and seed still give the same candidates and decisions.

    python benchmarks/behaviour_snapshot.py --out before.json      # on the old code
    python benchmarks/behaviour_snapshot.py --out after.json --compare before.json

With --compare it prints, per loop, whether candidates and decisions are identical and
exits 1 if any differ. Runs use fresh temporary stores and no MLflow."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repository, not benchmarks/ (which has kernels.py)

TOOLSIM = ["instances_per_template=5"]
TINY_GRPO = ["grpo.pretrain_steps=10", "grpo.prompts_per_step=2", "grpo.group_size=2", "grpo.max_new_tokens=12"]
CASES = {
    # name: (loop, suite, budget, suite params, --set settings)
    "evolve_circle": ("evolve", "circle_packing", 8, [], []),
    "evolve_bins": ("evolve", "bin_packing", 4, ["datasets=or1"], []),
    "self_healing": ("self_healing", "toolsim", 2, TOOLSIM, []),
    "growing_harness": ("growing_harness", "toolsim", 2, TOOLSIM, []),
    "medrsi": ("medrsi", "toolsim", 2, TOOLSIM, ["medrsi.trial_batches=1", "medrsi.batch_size=4"]),
    "designer_rsi": ("designer_rsi", "toolsim", 2, TOOLSIM, ["designer.traffic_batch=4"]),
    "grpo": ("grpo", "arith", 2, ["n_per_category=40"], TINY_GRPO),
}

CANDIDATES = "SELECT round, candidate_id FROM candidates WHERE run_id = '{run}' ORDER BY round, candidate_id"
DECISIONS = ("SELECT round, candidate_id, decision FROM gate_decisions WHERE run_id = '{run}' "
             "ORDER BY round, candidate_id, decision")


def snapshot(name: str, root: Path) -> dict:
    from cli.env import prepare_environment

    store = str(root / name)
    prepare_environment(store)  # before Prefect is imported
    from cli.running import make_config
    from flows import LOOPS
    from storage.catalog import sql
    from storage.store import open_store

    loop, suite, budget, params, settings = CASES[name]
    config = make_config(loop, suite, budget, 0, 1, None, "mutate", 16, params, 30.0, False, settings)
    run_id = f"snapshot-{name}"
    LOOPS[loop](config=config, store_uri=store, run_id=run_id)
    opened = open_store(store)
    return {"candidates": sql(opened, CANDIDATES.format(run=run_id)).to_pylist(),
            "decisions": sql(opened, DECISIONS.format(run=run_id)).to_pylist()}


def compare(before: dict, after: dict) -> bool:
    same = True
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None or new is None:
            print(f"{name:<16} only in {'after' if old is None else 'before'}")
            same = False
            continue
        flags = {part: old[part] == new[part] for part in ("candidates", "decisions")}
        outcomes = [sorted((d["round"], d["decision"]) for d in snap["decisions"]) for snap in (old, new)]
        print(f"{name:<16} candidates {'identical' if flags['candidates'] else 'DIFFER'} ({len(new['candidates'])}), "
              f"decisions {'identical' if flags['decisions'] else 'DIFFER'} ({len(new['decisions'])}), "
              f"decision per round {'identical' if outcomes[0] == outcomes[1] else 'DIFFER'}")
        same &= all(flags.values())
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, default=None, help="An earlier snapshot to compare with.")
    parser.add_argument("--only", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    result = {}
    with tempfile.TemporaryDirectory(prefix="ratchet-snapshot-") as root:
        for name in args.only:
            started = time.monotonic()
            result[name] = snapshot(name, Path(root))
            print(f"{name}: {len(result[name]['candidates'])} candidates in {time.monotonic() - started:.0f} s",
                  flush=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    if args.compare is not None:
        return 0 if compare(json.loads(args.compare.read_text()), result) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
