"""Budget caps: what a run has spent, and whether it may begin its next round.

A loop with rounds asks ``admit_round`` before it samples round ``r``. The spend is
computed from the run's own rows (the same sums as the ``ledger`` view): LLM tokens from
``candidates.tokens_in + tokens_out``, evaluations from ``executions``. A round that
was admitted once is admitted again without a check (its marker ``budget-rNNNN`` is in
the store), so a resumed run re-enters the rounds it had begun, and a round not yet
admitted sees only the rows of the rounds before it: a run stopped by a cap and resumed
with a higher one makes the rows a run with the higher cap from the start makes.

The check is at round boundaries only: a round once begun runs to its end, so a run can
pass a cap by at most one round's spend. A cap is reached when the spend is at least the
cap (a run capped at 10 evaluations that has made 10 begins no new round).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from prefect import task

from schemas.configs import RunConfig
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.retry import STAGE_OPTIONS

CAPS = ("max_llm_tokens", "max_evaluations")
"""The config fields that are budget caps (`ratchet run/resume --max-...`)."""


@dataclass(frozen=True)
class Spend:
    """What a run has spent so far; the columns of the ``ledger`` view."""

    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    llm_seconds: float = 0.0
    sandbox_cpu_s: float = 0.0
    evaluations: int = 0

    @property
    def llm_tokens(self) -> int:
        return self.tokens_in + self.tokens_out


def spend_of(candidates: pa.Table, executions: pa.Table) -> Spend:
    """The spend of a run's candidate rows (``tokens_in``, ``tokens_out``, ``latency_s``)
    and execution rows (``cpu_s``); NULLs count as nothing, as in the ``ledger`` view."""
    latencies = [s for s in candidates.column("latency_s").to_pylist() if s is not None]
    return Spend(
        llm_calls=len(latencies),
        tokens_in=sum(t for t in candidates.column("tokens_in").to_pylist() if t is not None),
        tokens_out=sum(t for t in candidates.column("tokens_out").to_pylist() if t is not None),
        llm_seconds=sum(latencies),
        sandbox_cpu_s=sum(c for c in executions.column("cpu_s").to_pylist() if c is not None),
        evaluations=executions.num_rows,
    )


def exhausted(spend: Spend, max_llm_tokens: int | None, max_evaluations: int | None) -> str | None:
    """Why no further round may begin (the run's `budget_exhausted` reason), or None."""
    reached = []
    if max_llm_tokens is not None and spend.llm_tokens >= max_llm_tokens:
        reached.append(f"{spend.llm_tokens} LLM tokens of max_llm_tokens={max_llm_tokens}")
    if max_evaluations is not None and spend.evaluations >= max_evaluations:
        reached.append(f"{spend.evaluations} evaluations of max_evaluations={max_evaluations}")
    return "budget cap reached: " + "; ".join(reached) if reached else None


def run_spend(ref: RunRef) -> Spend:
    """The run's spend from its stored rows."""
    store = store_for(ref.store_uri)
    candidates = store.read("candidates", ref.run_id).select(["tokens_in", "tokens_out", "latency_s"])
    return spend_of(candidates, store.read("executions", ref.run_id).select(["cpu_s"]))


@task(name="admit-round", **STAGE_OPTIONS)
def admit_round(ref: RunRef, round_index: int, config: RunConfig) -> str | None:
    """None when round ``round_index`` may begin (recorded by its marker); else the
    reason the caps of ``config`` stop the run before it. A run without caps reads and
    writes nothing (a resume can only raise a cap the run has)."""
    if all(getattr(config, cap) is None for cap in CAPS):
        return None
    store = store_for(ref.store_uri)
    marker = f"budget-r{round_index:04d}"
    if store.has_marker(ref.run_id, marker):
        return None
    reason = exhausted(run_spend(ref), config.max_llm_tokens, config.max_evaluations)
    if reason is not None:
        return f"{reason}, before round {round_index}"
    store.put_marker(ref.run_id, marker)
    return None
