from schemas.rows import CandidateRow, ExecutionRow, ScoreRow
from tasks.runtime.context import RunRef
from tasks.stages.distill import failure_modes
from tasks.stages.sample import failure_memory

REF = RunRef(store_uri="/unused", run_id="r")


def candidate(cid, operator, round_index=1):
    return CandidateRow(run_id="r", candidate_id=cid, round=round_index, parent_ids=[], operator=operator,
                        proposer="mutate", artifact_kind="program", artifact_uri="u", island=0, summary="")


def execution(cid, case, status, error=None):
    return ExecutionRow(run_id="r", execution_id=f"{cid}-{case}", candidate_id=cid, case_id=case, split="train",
                        seed=0, noise_key=None, attempt=0, status=status, error=error, wall_s=0.1, cpu_s=None,
                        peak_rss_mb=None, tokens_in=None, tokens_out=None, cost_usd=None, output_uri=None,
                        trajectory_uri=None)


def invalid(cid, case, reason):
    return ScoreRow(run_id="r", execution_id=f"{cid}-{case}", candidate_id=cid, case_id=case, split="train",
                    scorer="s", scorer_version="v", metric="m", value=0.0, valid=False, reason=reason)


def test_failure_modes_count_distinct_candidates_per_operator_and_kind():
    candidates = [candidate("a", "statement"), candidate("b", "statement"), candidate("c", "statement"),
                  candidate("d", "constant"), candidate("late", "statement", round_index=5)]
    executions = [
        execution("a", "x", "error", "NameError: name 'end' is not defined"),
        execution("a", "y", "error", "NameError: name 'end' is not defined"),
        execution("b", "x", "error", "NameError: name 'k' is not defined"),
        execution("c", "x", "timeout"),
        execution("d", "x", "ok"),
        execution("late", "x", "error", "NameError: x"),
    ]
    scores = [invalid("d", "x", "overlap: circles 1 and 2 overlap by 1e-3")]
    rows = failure_modes(REF, 2, candidates, executions, scores, min_support=2)
    by_content = {r.content: r for r in rows}
    assert set(by_content) == {"statement\tNameError", "statement\ttimeout", "constant\tinvalid overlap"}
    name_error = by_content["statement\tNameError"]
    assert name_error.support == 2 and name_error.status == "active"
    assert name_error.source_execution_ids == ["a-x", "a-y", "b-x"]
    assert by_content["statement\ttimeout"].status == "observed"


def test_proposer_reads_latest_active_snapshot_before_the_round():
    rows = failure_modes(REF, 1, [candidate("a", "statement"), candidate("b", "statement")],
                         [execution("a", "x", "timeout"), execution("b", "x", "timeout")], [], min_support=2)
    memory = failure_memory(rows, round_index=2)
    assert [(m.operator, m.error_kind, m.support) for m in memory] == [("statement", "timeout", 2)]
    assert failure_memory(rows, round_index=1) == []
