"""The rpmem loop end to end on the real engine and store at a tiny size: 2 rounds of a
few training steps, the champion writing holdout users' sessions, and the base swap.
The gate sees select users only; memory states have constant size; a rerun writes nothing."""

import hashlib
import json

import pytest

from flows.rpmem import rpmem
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "cases", "gate_decisions", "registry", "train_steps", "rpm_sessions", "rpm_gate_stats",
          "rpm_qa", "rpm_swap")


def small_config() -> RunConfig:
    return RunConfig(loop="rpmem", suite="arith", budget=2, seed=0, tracking=False,
                     rpmem={"n_keys": 3, "updates": 2, "train_sessions": 2, "eval_sessions": 3, "select_users": 6,
                            "holdout_users": 5, "d_mem": 16, "rank": 4, "batch": 8, "compile_steps": 30,
                            "merge_steps": 5, "swap_steps": 4})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("rpmem") / "store")
    summary = rpmem(config=small_config(), store_uri=root, run_id="rpm-a")
    return open_store(root), root, summary


def test_systems_are_content_candidates_gated_on_select_users_only(run):
    store, _, summary = run
    candidates = store.read_rows("candidates")
    assert len(candidates) == 1 + 2 * 2 + 2  # init, 2 rounds x 2 stages, 2 swap arms
    for c in candidates:
        assert hashlib.sha256(store.get_blob(c.candidate_id)).hexdigest() == c.candidate_id
    decisions = store.read_rows("gate_decisions")
    assert len(decisions) == 2
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert evidence["split"] == "select" and all(u.startswith("select-") for u in evidence["users"])
        assert d.delta == pytest.approx((sum(evidence["candidate"]) - sum(evidence["baseline"])) / d.n_cases)
        assert d.decision == ("accept" if d.delta > 0 else "reject")
    accepted = [d.candidate_id for d in decisions if d.decision == "accept"]
    registry = store.read_rows("registry")
    assert [r.candidate_id for r in registry if r.stage == "experimental"] == accepted
    (final,) = [r for r in registry if r.stage == "stable"]
    assert final.candidate_id == summary["candidate_id"] and final.holdout_score == summary["holdout_score"]
    assert summary["candidate_id"] == (accepted[-1] if accepted else candidates[0].candidate_id)
    assert {c.split for c in store.read_rows("cases")} == {"select", "holdout"}


def test_memory_has_constant_size_and_qa_covers_every_session(run):
    store, _, summary = run
    champion = summary["candidate_id"]
    sessions = [s for s in store.read_rows("rpm_sessions") if s.candidate_id == champion]
    assert len(sessions) == 5 * 3 and {s.split for s in sessions} == {"holdout"}
    stats = store.read_rows("rpm_gate_stats")
    assert len(stats) == 15 and all(0 < s.mean_keep < 1 and 0 < s.mean_write < 1 for s in stats)
    qa = sql(store, "SELECT base, n_sessions, count(*) AS n, avg(correct::int) AS recall FROM rpm_qa "
                    "GROUP BY ALL ORDER BY base, n_sessions").to_pylist()
    # one base for the champion, the other for the two swap arms (5 users x 3 keys each)
    assert [(r["base"], r["n_sessions"], r["n"]) for r in qa] == [
        ("student", 1, 15), ("student", 2, 15), ("student", 3, 15),
        ("teacher", 1, 30), ("teacher", 2, 30), ("teacher", 3, 30)]
    student_last = [r["recall"] for r in qa if r["base"] == "student" and r["n_sessions"] == 3][0]
    assert summary["holdout_score"] == pytest.approx(student_last)
    swap = store.read_rows("rpm_swap")
    assert {(s.decoder_init, s.setting) for s in swap} == {(a, n) for a in ("reuse", "scratch") for n in ("n=1", "n=3")}
    reuse = next(c for c in store.read_rows("candidates") if c.operator == "swap_reuse")
    assert reuse.parent_ids == [champion]


def test_a_rerun_writes_nothing(run, prefect_server):
    store, root, summary = run
    before = counts(store)
    again = rpmem(config=small_config(), store_uri=root, run_id="rpm-a")
    assert again == summary and counts(store) == before


def test_the_report_draws_what_the_qa_and_swap_tables_say(run, tmp_path):
    from cli.report import report_series, write_report

    store, root, summary = run
    series = report_series(root, "rpm-a")["series"]
    assert [c["n"] for c in series.curve] == [1, 2, 3] and all(c["users"] == 5 for c in series.curve)
    by_n = {int(k): v for k, v in summary["holdout_recall_by_sessions"].items()}
    assert [c["recall"] for c in series.curve] == pytest.approx([by_n[1], by_n[2], by_n[3]])
    assert all(c["ci"][0] <= c["recall"] <= c["ci"][1] for c in series.curve)
    assert {(s["decoder_init"], s["setting"]) for s in series.swap} == {
        (a, n) for a in ("reuse", "scratch") for n in ("n=1", "n=3")}
    path = write_report(root, "rpm-a", tmp_path / "rpmem.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
