"""datasense's stages at their Prefect boundaries; each publishes its part once
(`tasks.runtime.parts.once`), so a retry or `ratchet resume` continues where it stopped."""

from __future__ import annotations

import json
import random
from dataclasses import asdict

from prefect import task

from schemas.ids import derived_id
from schemas.loops import DataSenseRun
from schemas.rows import CandidateRow, DistillateRow
from tasks.loops.datasense.pool import Row, Submission, build_pool, check_submission, select
from tasks.loops.datasense.students import row_losses, train_student
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.stages import accuracy, policy_row, warm_start


def protocol_of(ref: RunRef) -> DataSenseRun:
    return run_config(ref)


def pool_seed(ref: RunRef, index: int) -> int:
    return protocol_of(ref).seed * 1000 + index


@task(name="init-policy", **STAGE_OPTIONS)
def base_policy(ref: RunRef) -> str:
    """The frozen base: the shared supervised warm start (its blob id)."""
    section = protocol_of(ref).datasense

    def rows() -> list[CandidateRow]:
        blob = warm_start(ref, section.categories, section.base_steps)
        return [policy_row(ref, blob, 0, [], "base", f"frozen base, {section.base_steps} supervised steps")]

    return once(ref, "candidates", "init", "base", rows)[0].candidate_id


@task(name="sample", **STAGE_OPTIONS)
def sample_pool(ref: RunRef, index: int, base: str) -> list[Row]:
    """sample: the pool (rows with their hidden defects, as a blob) and the base model's
    loss per row, the forward-pass signal the selectors may read (a distillate)."""
    store, section = store_for(ref.store_uri), protocol_of(ref).datasense

    def rows() -> list[DistillateRow]:
        shares = {"wrong_label": section.wrong_label_share, "duplicate": section.duplicate_share,
                  "off_task": section.off_task_share}
        pool = build_pool(section.categories, section.pool_size, shares, pool_seed(ref, index))
        losses = row_losses(store.get_blob(base), pool)
        blob = store.put_blob(json.dumps({"rows": [asdict(r) for r in pool],
                                          "base_loss": {str(k): v for k, v in losses.items()}}).encode())
        counts = {d: sum(r.defect == d for r in pool) for d in ("clean", "wrong_label", "duplicate", "off_task")}
        return [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "pool", index), round=index,
                              kind="pool", content=json.dumps(counts, sort_keys=True), uri=store.blob_uri(blob),
                              source_execution_ids=[], support=len(pool), status="active")]

    (row,) = once(ref, "distillates", "sample", f"pool-{index:02d}", rows)
    return [Row(**r) for r in _pool_blob(ref, row.uri)["rows"]]


def _pool_blob(ref: RunRef, uri: str) -> dict:
    return json.loads(store_for(ref.store_uri).get_blob(uri.rsplit("/", 1)[-1]))


def base_losses_of(ref: RunRef, index: int) -> dict[int, float]:
    (row,) = store_for(ref.store_uri).read_part("distillates", ref.run_id, "sample", f"pool-{index:02d}")
    return {int(k): v for k, v in _pool_blob(ref, row.uri)["base_loss"].items()}


@task(name="distill", **STAGE_OPTIONS)
def submit(ref: RunRef, index: int, pool: list[Row]) -> dict[str, Submission]:
    """Every selector's submission (groups and predicted ranking), checked for validity;
    one `submission` distillate each. Selectors never see a student's score."""
    config = protocol_of(ref)
    section, losses = config.datasense, base_losses_of(ref, index)

    def rows() -> list[DistillateRow]:
        out = []
        for name in section.selectors:
            found = select(name, pool, losses, section.groups, pool_seed(ref, index))
            why = check_submission(found, pool, section.groups)
            content = {"selector": name, "groups": [list(g) for g in found.groups],
                       "predicted_rank": list(found.predicted_rank), "valid": why is None, "reason": why}
            out.append(DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "submission", index, name),
                                     round=index, kind="submission", content=json.dumps(content, sort_keys=True),
                                     uri=None, source_execution_ids=[], support=len(pool), status="active"))
        return out

    stored = once(ref, "distillates", "distill", f"submissions-{index:02d}", rows)
    return {json.loads(r.content)["selector"]: _submission(json.loads(r.content)) for r in stored
            if json.loads(r.content)["valid"]}


def _submission(content: dict) -> Submission:
    return Submission(content["selector"], tuple(tuple(g) for g in content["groups"]), tuple(content["predicted_rank"]))


def student_sets(ref: RunRef, index: int, pool: list[Row], submissions: dict[str, Submission]) -> dict[str, list[int]]:
    """Every student to train: ``<selector>:g<k>`` and ``random:r<k>`` -> its row ids."""
    section = protocol_of(ref).datasense
    sets = {f"{name}:g{g}": list(group) for name, sub in sorted(submissions.items())
            for g, group in enumerate(sub.groups)}
    ids, size = [r.row_id for r in pool], section.pool_size // section.groups
    for k in range(section.random_subsets):
        sets[f"reference:r{k}"] = sorted(random.Random(f"datasense-ref:{pool_seed(ref, index)}:{k}").sample(ids, size))
    return sets


@task(name="execute", **STAGE_OPTIONS)
def train_and_verify(ref: RunRef, index: int, base: str, pool: list[Row],
                     submissions: dict[str, Submission]) -> dict[str, str]:
    """execute + score: a student per set, trained once (a candidate part each) and
    verified on the hidden holdout split (the training family's evaluation parts)."""
    store, section = store_for(ref.store_uri), protocol_of(ref).datasense
    by_id, base_blob, out = {r.row_id: r for r in pool}, store.get_blob(base), {}
    for name, row_ids in student_sets(ref, index, pool, submissions).items():
        def rows(name=name, row_ids=row_ids) -> list[CandidateRow]:
            weights = train_student(base_blob, [by_id[i] for i in row_ids], section.sft_steps, section.batch_size,
                                    section.lr, f"{pool_seed(ref, index)}:{name}")
            blob = store.put_blob(weights)
            return [policy_row(ref, blob, index + 1, [base], "sft", f"pool {index} {name}: {len(row_ids)} rows")]

        key = f"p{index:02d}-{name.replace(':', '-')}"
        out[name] = once(ref, "candidates", "train", key, rows)[0].candidate_id
        accuracy(ref, out[name], "holdout")
        reporter().advance(1, f"pool {index} {name}")
    return out
