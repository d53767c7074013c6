"""RPMem findings on arith sessions: recall against the number of sessions at constant
memory size, and, on a base swap, the reused encoder + gate against training from
scratch, paired per holdout user (same users, same sessions, same base) over seeds (each
seed: its own bases, users and initial weights).

It composes the loop's pure functions (`tasks.loops.rpmem`) as the flow's stages do,
without the store: stage 1 (compiler + decoder), stage 2 (the gate only), the holdout
write path, and the swap (a new decoder with encoder + gate reused vs a whole system
from scratch, the same steps).

Paper table shape: recall per number of sessions (the paper: 1-64 sessions; PERMA 85.52%
on Qwen3-8B) and reuse vs scratch per base x setting (the paper: reuse wins all 28
pairs). Arms on the recall curve, at the same memory size:

- ``rpmem``: both stages; the gate merges every session into the memory.
- ``stage1``: the same compiler + decoder, the gate as initialised (no stage 2): what the
  learned merge adds.
- ``last``: only the latest session's latent decoded (no memory across sessions): what
  remembering earlier sessions adds.

    .venv/bin/python benchmarks/rpmem_findings.py            # 3 seeds, 48 users, 8 sessions
    .venv/bin/python benchmarks/rpmem_findings.py --quick    # 1 seed, small
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = ("last", "stage1", "rpmem")


def last_only(base, states, model, users, keys):
    """Recall (U, N, K) when the memory is only the latest session's latent (no merge)."""
    import torch

    from tasks.loops.rpmem.model import answer_logits, encode_sessions
    from tasks.loops.rpmem.train import answer_targets

    out = []
    with torch.no_grad():
        for n in range(len(users[0])):
            sessions = [u[n] for u in users]
            latent = model.compiler(*encode_sessions([s.text for s in sessions]))
            pred = answer_logits(base, states, model.decoder(latent)).argmax(-1)
            out.append(pred == answer_targets(sessions, keys))
    return torch.stack(out, 1)


def one_seed(seed: int, users: int, sessions: int, compile_steps: int, merge_steps: int, swap_steps: int,
             n_keys: int = 6, updates: int = 4, d_mem: int = 64, rank: int = 8, batch: int = 32,
             lr: float = 1e-2) -> dict[str, object]:
    """Per-user recall (U, N) of each arm, and per-user recall after 1 and N sessions of the
    swap arms on the other base."""
    import copy

    import torch

    from tasks.loops.rpmem.model import BASES, Decoder, RPMem, frozen_base, question_states
    from tasks.loops.rpmem.sessions import keys_of, user_sessions
    from tasks.loops.rpmem.train import batch_users, compile_loss, merge_loss, stream, train_steps

    torch.set_num_threads(1)
    keys = keys_of(n_keys)
    bases = {name: frozen_base(name, seed) for name in BASES}
    states = {name: question_states(b, keys) for name, b in bases.items()}
    holdout = [user_sessions(seed, "holdout", u, sessions, updates, keys) for u in range(users)]
    torch.manual_seed(seed)
    model = RPMem(d_mem, BASES["student"], rank)
    b, s = bases["student"], states["student"]
    train_steps([*model.compiler.parameters(), *model.decoder.parameters()], lambda i: compile_loss(
        b, s, model, batch_users(seed, "compile", i, batch, 1, updates, keys), keys), 0, compile_steps, lr)
    stage1 = copy.deepcopy(model)
    train_steps(model.gate.parameters(), lambda i: merge_loss(
        b, s, model, batch_users(seed, "merge", i, batch, 4, updates, keys), keys), 0, merge_steps, lr)
    curves = {"rpmem": stream(b, s, model, holdout, keys)[1], "stage1": stream(b, s, stage1, holdout, keys)[1],
              "last": last_only(b, s, model, holdout, keys)}
    tb, ts = bases["teacher"], states["teacher"]
    reuse = copy.deepcopy(model)
    torch.manual_seed(seed + 1)
    reuse.decoder = Decoder(d_mem, BASES["teacher"], rank)
    scratch = RPMem(d_mem, BASES["teacher"], rank)
    for arm, params in (("reuse", reuse.decoder.parameters()), ("scratch", scratch.parameters())):
        m = reuse if arm == "reuse" else scratch
        train_steps(params, lambda i: merge_loss(tb, ts, m, batch_users(seed, "swap", i, batch, 4, updates, keys),
                                                 keys), 0, swap_steps, lr)
        curves[arm] = stream(tb, ts, m, holdout, keys)[1]
    return {arm: c.float().mean(-1).tolist() for arm, c in curves.items()}  # per user, per n


def measure(seeds: int, users: int, sessions: int, compile_steps: int, merge_steps: int, swap_steps: int,
            **kw) -> dict[str, list[list[float]]]:
    """arm -> per (seed, user): recall after each of 1..N sessions."""
    found: dict[str, list[list[float]]] = {}
    for seed in range(seeds):
        for arm, rows in one_seed(seed, users, sessions, compile_steps, merge_steps, swap_steps, **kw).items():
            found.setdefault(arm, []).extend(rows)
    return found


def rows_of(found: dict[str, list[list[float]]]) -> list:
    n = len(found["rpmem"][0])
    at = lambda arm, k: [u[k - 1] for u in found[arm]]  # noqa: E731
    rows = []
    for k in sorted({1, (n + 1) // 2, n}):
        rows.append(paired_row(f"merge vs no merge, n={k}", "recall", "stage1", at("stage1", k), "rpmem",
                               at("rpmem", k)))
        rows.append(paired_row(f"memory vs last session, n={k}", "recall", "last", at("last", k), "rpmem",
                               at("rpmem", k)))
    for k in sorted({1, n}):
        rows.append(paired_row(f"base swap, n={k}", "recall", "scratch", at("scratch", k), "reuse", at("reuse", k)))
    return rows


def curve(found: dict[str, list[list[float]]]) -> str:
    """Recall per number of sessions per arm (mean over users and seeds)."""
    n = len(found["rpmem"][0])
    lines = ["| sessions | " + " | ".join(found) + " |", "| --- |" + " --- |" * len(found)]
    for k in range(n):
        lines.append(f"| {k + 1} | " + " | ".join(f"{fmean(u[k] for u in found[a]):.3f}" for a in found) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 16 users, 4 sessions, few steps")
    parser.add_argument("--seeds", type=int, default=3, help="seeds (bases, users and weights per seed)")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.quick:
        found = measure(1, 16, 4, 60, 10, 10)
    else:
        found = measure(args.seeds, 48, 8, 400, 150, 100)
    print("memory size: 64 floats per user whatever the number of sessions (quick: the same)")
    print(curve(found))
    print("\nunits of the CIs below: holdout users x seeds (the 'seeds' column counts them)")
    print(table(rows_of(found)))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
