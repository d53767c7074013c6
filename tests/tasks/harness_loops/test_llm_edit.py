"""The harness loops' shared record of an llm answer: an unusable one becomes an
`llm_unusable` candidate whose blob keeps the reason and the raw answer and whose
summary ends with the answer's blob, the call's tokens and seconds in its columns; a usable
one's summary carries the same answer note."""

import json

from storage.store import open_store
from tasks.harness_loops.llm_edit import NoLLMEdit, costed_summary, is_unusable, unusable_row
from tasks.proposers import Proposal
from tasks.runtime.context import RunRef

CALL = Proposal("def harness():\n    return {}\n", "llm_rewrite", ("c0",), "llm", "llm_rewrite by m: same",
                answer="Same.\n```python\ndef harness():\n    return {}\n```", tokens_in=812, tokens_out=41,
                latency_s=6.25)


def test_an_unusable_answer_is_recorded_with_its_raw_answer_and_cost(tmp_path):
    ref = RunRef(store_uri=str(tmp_path), run_id="r1")
    row = unusable_row(ref, 3, "c0", NoLLMEdit("the llm's answer leaves the harness unchanged", CALL))
    store = open_store(str(tmp_path))
    record = json.loads(store.get_blob(row.candidate_id))
    assert record == {"parent_id": "c0", "round": 3, "reason": "the llm's answer leaves the harness unchanged",
                      "answer": CALL.answer}
    assert (row.operator, row.proposer, row.artifact_kind, row.round, row.parent_ids) == (
        "llm_unusable", "llm", "llm_answer", 3, ["c0"])
    head, cost = row.summary.split(" | ")
    assert head == "llm_unusable: the llm's answer leaves the harness unchanged"
    answer_uri = cost.removeprefix("answer=")
    assert cost == f"answer={answer_uri}"
    assert (row.tokens_in, row.tokens_out, row.latency_s) == (812, 41, 6.25)
    assert store.get_blob(answer_uri.rsplit("/", 1)[-1]).decode() == CALL.answer
    assert is_unusable(row)


def test_a_reason_without_a_call_is_recorded_without_a_cost(tmp_path):
    row = unusable_row(RunRef(store_uri=str(tmp_path), run_id="r1"), 1, "c0", NoLLMEdit("x", asked=True))
    assert row.summary == "llm_unusable: x" and (row.tokens_in, row.tokens_out, row.latency_s) == (None, None, None)
    assert json.loads(open_store(str(tmp_path)).get_blob(row.candidate_id))["answer"] is None


def test_a_usable_answer_keeps_its_summary_then_the_detail_then_the_cost(tmp_path):
    summary = costed_summary(RunRef(store_uri=str(tmp_path), run_id="r1"), CALL, " | {\"id\": \"r\"}")
    assert summary.startswith('llm_rewrite by m: same | {"id": "r"} | answer=')
