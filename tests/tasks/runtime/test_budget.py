"""Budget caps: the spend of a run's rows, the cap rule, and the round admission that a
resume re-enters (the flow end to end: tests/flows/test_evolve_budget.py)."""

import pytest

from schemas.configs import RunConfig
from schemas.rows import CandidateRow, ExecutionRow
from storage.store import open_store
from tasks.runtime.budget import Spend, admit_round, exhausted, run_spend
from tasks.runtime.context import RunRef

RUN = "budget-run"


def candidate(index: int, round_: int, tokens_in=None, tokens_out=None, latency_s=None) -> CandidateRow:
    return CandidateRow(run_id=RUN, candidate_id=f"c{index}", round=round_, parent_ids=[], operator="llm_diff",
                        proposer="llm", artifact_kind="program", artifact_uri=f"file:///b/c{index}", island=0,
                        summary="s", tokens_in=tokens_in, tokens_out=tokens_out, latency_s=latency_s)


def execution(index: int, cpu_s) -> ExecutionRow:
    return ExecutionRow(run_id=RUN, execution_id=f"e{index}", candidate_id=f"c{index % 2}", case_id="k", split="train",
                        seed=0, noise_key=None, attempt=0, status="ok", error=None, wall_s=1.0, cpu_s=cpu_s,
                        peak_rss_mb=None, tokens_in=None, tokens_out=None, cost_usd=None, output_uri=None,
                        trajectory_uri=None)


def llm_config(**caps) -> RunConfig:
    return RunConfig(loop="evolve", suite="circle_packing", budget=8, proposer="llm", **caps)


@pytest.fixture
def ref(tmp_path) -> RunRef:
    """Round 1 through the real writers: two calls (300 + 40 and 200 + 60 tokens, 2.5 + 1.0 s)
    and a call that timed out (no usage, 0.5 s); 3 executions (0.25 + 0.5 CPU s and one None)."""
    store = open_store(str(tmp_path / "store"))
    store.write_part("candidates", RUN, "sample", "r0001", [candidate(0, 1, 300, 40, 2.5), candidate(1, 1, 200, 60, 1.0)])
    store.write_part("candidates", RUN, "sample", "r0001-unusable", [candidate(2, 1, latency_s=0.5)])
    store.write_part("executions", RUN, "execute", "r0001", [execution(0, 0.25), execution(1, 0.5), execution(2, None)])
    return RunRef(store_uri=store.root_uri, run_id=RUN)


def test_run_spend_sums_the_stored_rows(ref):
    assert run_spend(ref) == Spend(llm_calls=3, tokens_in=500, tokens_out=100, llm_seconds=4.0, sandbox_cpu_s=0.75,
                                   evaluations=3)
    assert run_spend(ref).llm_tokens == 600


def test_a_cap_is_reached_at_the_spend_itself():
    spend = Spend(tokens_in=500, tokens_out=100, evaluations=3)
    assert exhausted(spend, None, None) is None
    assert exhausted(spend, 601, 4) is None
    assert exhausted(spend, 600, None) == "budget cap reached: 600 LLM tokens of max_llm_tokens=600"
    assert exhausted(spend, 601, 3) == "budget cap reached: 3 evaluations of max_evaluations=3"
    assert exhausted(spend, 10, 1) == ("budget cap reached: 600 LLM tokens of max_llm_tokens=10; "
                                       "3 evaluations of max_evaluations=1")


def test_admit_round_stops_at_a_reached_token_cap_and_records_admitted_rounds(ref):
    store = open_store(ref.store_uri)
    assert admit_round.fn(ref, 2, llm_config(max_llm_tokens=601)) is None  # 600 tokens spent: round 2 begins
    assert store.has_marker(RUN, "budget-r0002")
    assert admit_round.fn(ref, 3, llm_config(max_llm_tokens=600)) == (
        "budget cap reached: 600 LLM tokens of max_llm_tokens=600, before round 3")
    assert not store.has_marker(RUN, "budget-r0003")
    # a round admitted once is re-entered on resume, whatever its later rounds spent
    store.write_part("candidates", RUN, "sample", "r0002", [candidate(3, 2, 5000, 5000, 9.0)])
    assert admit_round.fn(ref, 2, llm_config(max_llm_tokens=601)) is None
    assert admit_round.fn(ref, 3, llm_config(max_llm_tokens=10_601)) is None  # a raised cap: 10 600 spent


def test_a_run_without_caps_is_admitted_without_a_marker(ref):
    assert admit_round.fn(ref, 2, llm_config()) is None
    assert not open_store(ref.store_uri).has_marker(RUN, "budget-r0002")


def test_admit_round_stops_at_an_evaluation_cap(ref):
    mutate = RunConfig(loop="evolve", suite="circle_packing", budget=8, max_evaluations=3)
    assert admit_round.fn(ref, 2, mutate) == "budget cap reached: 3 evaluations of max_evaluations=3, before round 2"
    assert admit_round.fn(ref, 2, mutate.model_copy(update={"max_evaluations": 4})) is None


def test_caps_are_refused_where_they_cannot_apply():
    with pytest.raises(ValueError, match="max_llm_tokens caps the llm proposer's tokens, but this run's proposer "
                                         "is 'mutate'"):
        RunConfig(loop="evolve", suite="circle_packing", budget=8, max_llm_tokens=100)
    with pytest.raises(ValueError, match=r"grpo does not check budget caps \(max_evaluations\); loops that do: evolve, self_healing"):
        RunConfig(loop="grpo", suite="arith", budget=8, max_evaluations=100)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        RunConfig(loop="evolve", suite="circle_packing", budget=8, max_evaluations=0)
