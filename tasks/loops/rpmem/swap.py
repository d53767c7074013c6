"""RPMem's base swap and the run summary. Swap: the memory moves to the other base. "reuse"
keeps the champion's compiler and merge gate and trains only a new decoder for that base;
"scratch" trains a whole new system (compiler, gate, decoder) on that base for the same
steps, with the stage-2 loss (sessions merged in time order). Both are chunks through the
GPU dispatch (`run_chunk`), candidates with content ids, scored on the holdout users after
1 session and after `eval_sessions` sessions (`rpm_swap`, and every question in `rpm_qa`).

Deviation: the paper trains the swap decoder on 664k sessions for one epoch; here both
arms get `rpmem.swap_steps` steps, so the comparison is at equal (small) compute."""

from __future__ import annotations

from statistics import fmean

import torch
from prefect import task

from schemas.ids import seed_for
from schemas.rpmem import RPMSwapRow
from schemas.rows import TrainStepRow
from tasks.loops.rpmem.gate import qa_rows, recall
from tasks.loops.rpmem.model import BASES, Decoder
from tasks.loops.rpmem.stages import config_of, fresh_system, load_system, publish_system, world
from tasks.loops.rpmem.train import batch_users, merge_loss, train_steps
from tasks.runtime.context import RunRef, store_for
from tasks.training.placement import chunk_key, run_chunk, worker_name
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.policy import pin_cpu_threads

ARMS = ("reuse", "scratch")


def _swap_work(ref: RunRef, chunk: int, first_step: int, n_steps: int, champion: str,
               arm: str) -> tuple[str, str | None]:
    stage, key = f"swap_{arm}", chunk_key(chunk)
    store = store_for(ref.store_uri)
    if store.has_part("train_steps", ref.run_id, stage, key):
        return store.read_part("candidates", ref.run_id, stage, key)[0].candidate_id, None
    pin_cpu_threads()
    config, section = config_of(ref), config_of(ref).rpmem
    target = section.swap_base()
    w = world(ref, target)
    if arm == "reuse":
        model = load_system(ref, champion)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed_for(config.seed, "rpmem", "swap-decoder"))
            model.decoder = Decoder(section.d_mem, BASES[target], section.rank)
        params = list(model.decoder.parameters())
    else:
        model = fresh_system(ref, target, "scratch")
        params = list(model.parameters())
    rows = train_steps(params, lambda s: merge_loss(w.base, w.states, model, batch_users(
        config.seed, "swap", s, section.batch, section.train_sessions, section.updates, w.keys), w.keys),
        first_step, n_steps, section.lr)
    blob = publish_system(ref, stage, key, model, target, 0, [champion] if arm == "reuse" else [], stage,
                          f"base {target}, {arm}: {n_steps} steps, loss {rows[0][1]:.3f} -> {rows[-1][1]:.3f}")
    store.write_part("train_steps", ref.run_id, stage, key, [TrainStepRow(
        run_id=ref.run_id, candidate_id=blob, step=s, loss=loss, metrics={}, tokens=0, samples=section.batch,
        wall_s=wall, worker=worker_name(), device="cpu") for s, loss, wall in rows])
    return blob, f"swap {arm}, loss {rows[-1][1]:.3f}"


@task(name="swap", **STAGE_OPTIONS)
def swap_base(ref: RunRef, champion: str) -> dict[str, float]:
    """The memory moved to the other base, reuse vs scratch; returns holdout recall per
    arm after the last session (nothing when `swap_steps` is 0)."""
    section = config_of(ref).rpmem
    if section.swap_steps == 0:
        return {}
    target, store, out = section.swap_base(), store_for(ref.store_uri), {}
    for arm in ARMS:
        candidate = run_chunk(ref, f"swap_{arm}", 0, 0, section.swap_steps, _swap_work, champion, arm)
        if not store.has_part("rpm_swap", ref.run_id, "swap", arm):
            correct = recall(ref, candidate, "holdout", target)[1].float()
            store.write_part("rpm_qa", ref.run_id, "swap", arm, qa_rows(ref, candidate, target, correct.bool()))
            store.write_part("rpm_swap", ref.run_id, "swap", arm, [RPMSwapRow(
                run_id=ref.run_id, candidate_id=candidate, base=target, decoder_init=arm, setting=f"n={n}",
                score=float(correct[:, n - 1].mean()), n_questions=correct[:, n - 1].numel())
                for n in sorted({1, section.eval_sessions})])
        rows = store.read_part("rpm_swap", ref.run_id, "swap", arm)
        out[arm] = next(r.score for r in rows if r.setting == f"n={section.eval_sessions}")
    return out


@task(name="summarize")
def rpmem_summary(ref: RunRef, champion: str, holdout: float, swap: dict[str, float]) -> dict[str, object]:
    """The run in numbers: admissions, the champion's select and holdout recall, the swap."""
    store = store_for(ref.store_uri)
    decisions = store.read_rows("gate_decisions", ref.run_id)
    qa = [r for r in store.read_rows("rpm_qa", ref.run_id) if r.candidate_id == champion]
    by_n = {n: fmean(r.correct for r in qa if r.n_sessions == n) for n in sorted({r.n_sessions for r in qa})}
    accepted = [d for d in decisions if d.decision == "accept"]
    return {"run_id": ref.run_id, "suite": "arith", "metric": "recall", "candidate_id": champion,
            "admitted": len(accepted), "rounds": len(decisions),
            "select_score": max((d.select_score for d in accepted), default=None),
            "holdout_score": holdout, "holdout_recall_by_sessions": by_n, "swap": swap}
