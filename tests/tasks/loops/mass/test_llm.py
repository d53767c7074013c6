import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from schemas.configs import EvolveConfig
from tasks.loops.mass.llm import LLMOptimizer, RuleOptimizer, feedback, parse_workflow
from tasks.loops.mass.loop import Execution
from tasks.loops.mass.workflow import Workflow
from tasks.proposers.llm import load_prompt

RUNS = [Execution("apply_coupon/000", "apply_coupon", True, 3, 0, ()),
        Execution("apply_coupon/001", "apply_coupon", False, 5, 1, ())]


def test_prompt_file_shows_the_workflow_the_feedback_and_the_constraints():
    text = load_prompt("mass_optimizer.txt")
    for field in ("$workers", "$fields", "$max_roles", "$workflow", "$feedback", '"workers"', '"returns"'):
        assert field in text
    assert feedback(RUNS) == "apply_coupon: 1/2, 4.0 calls"


def test_answers_that_break_the_contract_or_constraints_are_refused():
    ok = parse_workflow('{"workers": ["pager"], "returns": ["order_pages"], "reason": "x"}', 4)
    assert ok == Workflow(("pager",), ("order_pages",))
    for text in ("no json", '{"workers": ["oracle"], "returns": []}', '{"workers": [], "returns": ["x"]}',
                 '{"workers": ["pager", "retrier"], "returns": []}'):
        assert parse_workflow(text, 1) is None


def serve(answer: str):
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][0]["content"])
            out = json.dumps({"choices": [{"message": {"content": answer}, "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/v1", seen, server


def test_llm_optimizer_edits_and_falls_back_to_the_operators(monkeypatch):
    monkeypatch.setenv("RATCHET_LLM_MODEL", "m")
    url, seen, server = serve('{"workers": ["retrier"], "returns": ["error_code"], "reason": "retry faults"}')
    try:
        monkeypatch.setenv("RATCHET_LLM_BASE_URL", url)
        opt = LLMOptimizer(EvolveConfig(), seed=0, n=2, max_roles=4)
        kids = opt(Workflow(), RUNS, 1)
        assert kids == [("llm_edit", Workflow(("retrier",), ("error_code",)))] * 2
        assert (opt.calls, opt.tokens, opt.unusable, opt.author) == (2, 30, 0, "m")
        assert "apply_coupon: 1/2" in seen[0] and '"workers": []' in seen[0]
    finally:
        server.shutdown()
    url, _, server = serve("a better workflow would retry")
    try:
        monkeypatch.setenv("RATCHET_LLM_BASE_URL", url)
        opt = LLMOptimizer(EvolveConfig(), seed=0, n=2, max_roles=4)
        assert opt(Workflow(), RUNS, 1) == RuleOptimizer(0, 2, 4)(Workflow(), RUNS, 1)
        assert opt.unusable == 2
    finally:
        server.shutdown()


def test_calls_with_no_answer_fall_back_to_the_operators(gone_endpoint):
    opt = LLMOptimizer(EvolveConfig(llm_timeout_s=5), seed=0, n=2, max_roles=4)
    assert opt(Workflow(), RUNS, 1) == RuleOptimizer(0, 2, 4)(Workflow(), RUNS, 1)
    assert (opt.calls, opt.tokens, opt.unusable) == (2, 0, 2)


def test_the_real_models_unquoted_answer_is_kept_as_an_llm_unusable_candidate(monkeypatch, tmp_path):
    """The served 0.5B model answered JSON with unquoted worker names; that child comes from
    the operators, and the answer is kept with its call (reason, raw answer, tokens)."""
    from storage.store import open_store
    from tasks.loops.mass.llm import UNUSABLE_WHY, refused_rows
    from tasks.runtime.context import RunRef

    answer = '{"workers": [refunder, pager], "returns": ["order_state"], "reason": "one sentence"}'
    monkeypatch.setenv("RATCHET_LLM_MODEL", "m")
    url, _, server = serve(answer)
    try:
        monkeypatch.setenv("RATCHET_LLM_BASE_URL", url)
        opt = LLMOptimizer(EvolveConfig(), seed=0, n=1, max_roles=4)
        assert opt(Workflow(), RUNS, 1) == RuleOptimizer(0, 1, 4)(Workflow(), RUNS, 1)
    finally:
        server.shutdown()
    (row,) = refused_rows(RunRef(store_uri=str(tmp_path), run_id="r"), 1, opt)
    assert (row.operator, row.artifact_kind, row.parent_ids, row.tokens_in, row.tokens_out) == (
        "llm_unusable", "llm_answer", [Workflow().wf_id], 10, 5)
    record = json.loads(open_store(str(tmp_path)).get_blob(row.candidate_id))
    assert (record["reason"], record["answer"]) == (UNUSABLE_WHY, answer)
    assert refused_rows(RunRef(store_uri=str(tmp_path), run_id="r"), 1, RuleOptimizer(0, 1, 4)) == []


def test_a_call_with_no_answer_is_kept_with_its_reason(gone_endpoint, tmp_path):
    from tasks.loops.mass.llm import refused_rows
    from tasks.runtime.context import RunRef

    opt = LLMOptimizer(EvolveConfig(llm_timeout_s=5), seed=0, n=1, max_roles=4)
    opt(Workflow(), RUNS, 1)
    (row,) = refused_rows(RunRef(store_uri=str(tmp_path), run_id="r"), 1, opt)
    assert row.summary.startswith("llm_unusable: no answer: could not get an answer") and row.tokens_out is None
