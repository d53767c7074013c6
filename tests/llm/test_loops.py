"""Each remaining loop's `proposer: llm` path, two rounds end to end against the real
served 0.5B model: aide2's inner evolve (two outer nodes, each running evolve on both
suites) and the harness loops growing_harness, medrsi and designer_rsi. What the model
answers is whatever it answers; each test checks the recorded rows: every llm-written
candidate carries its call's cost and raw answer, an unusable answer is an
`llm_unusable` candidate that is never executed, and the run finishes."""

import json

import pytest

from schemas.admission import MedRSIConfig
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.integration]


def test_aide2_inner_evolve_two_nodes(prefect_server, served, recorded, tmp_path):
    from flows.aide2 import aide2

    config = RunConfig(loop="aide2", suite="circle_packing+bin_packing", budget=2, inner_budget=1, seed=0, workers=1,
                       tracking=False, proposer="llm", evolve=EvolveConfig(islands=1, llm_max_tokens=recorded.max_tokens))
    aide2(config=config, store_uri=str(tmp_path), run_id="llm-aide2")
    store = open_store(str(tmp_path))
    assert sorted(n.round for n in store.read_rows("nodes", "llm-aide2")) == [0, 1]
    for node in ("n000", "n001"):
        for suite in ("circle_packing", "bin_packing"):
            run_id = f"llm-aide2.{node}.{suite}"
            written = recorded.llm_rows(store, run_id)
            assert [c.round for c in written] == [1] and recorded.finished(store, run_id)
    assert recorded.finished(store, "llm-aide2")


def harness_run(loop: str, recorded, **sections) -> RunConfig:
    return RunConfig(loop=loop, suite="toolsim", budget=2, seed=0, workers=1, tracking=False, proposer="llm",
                     evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens), **sections)


def test_growing_harness_two_steps(prefect_server, served, recorded, tmp_path):
    from flows.growing_harness import growing_harness

    config = harness_run("growing_harness", recorded, suite_params={"instances_per_template": 10, "seed": 1},
                         grow={"window_size": 8, "gate_every": 1})
    growing_harness(config=config, store_uri=str(tmp_path), run_id="llm-grow")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-grow")
    assert [c.round for c in written] == [1, 2]  # a step whose answer gave no patch is recorded; the next one asks again
    assert all(c.operator in ("llm_unusable", "llm_patch") for c in written)
    assert recorded.finished(store, "llm-grow")


def test_medrsi_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.medrsi import medrsi

    config = harness_run("medrsi", recorded, suite_params={"instances_per_template": 5},
                         medrsi=MedRSIConfig(trial_batches=1, batch_size=4))
    medrsi(config=config, store_uri=str(tmp_path), run_id="llm-medrsi")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-medrsi")
    assert [c.round for c in written] == [1, 2]
    assert all(c.operator in ("llm_unusable", "llm_tool") for c in written)
    assert recorded.finished(store, "llm-medrsi")


def test_designer_rsi_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.designer_rsi import designer_rsi

    config = harness_run("designer_rsi", recorded, suite_params={"instances_per_template": 16},
                         designer={"traffic_batch": 12, "replay_targets": 4, "replay_successes": 3,
                                   "gap_threshold": 1, "revise_threshold": 1})
    designer_rsi(config=config, store_uri=str(tmp_path), run_id="llm-designer")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-designer")
    assert [c.round for c in written] == [1, 2]
    assert all(c.operator in ("llm_unusable", "llm_expand", "llm_deepen") for c in written)
    assert recorded.finished(store, "llm-designer")


def test_cover_llm_inputs_join_the_test_policy(prefect_server, served, recorded, tmp_path):
    """cover's llm path: the endpoint writes one input pool per problem, recorded with its
    raw answer and cost; the test policy gets one more action, ``llm``, and a problem
    whose answer held no usable input never draws it."""
    from flows.cover import cover
    from schemas.loops import CoverRun

    config = CoverRun(suite="codemidas", budget=2, seed=0, workers=1, tracking=False, proposer="llm",
                      evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens),
                      cover={"problems": 2, "programs": 4, "tests": 8, "pool_size": 4, "eval_seeds": 1})
    cover(config=config, store_uri=str(tmp_path), run_id="llm-cover")
    store = open_store(str(tmp_path))
    rows = {r.kind: [] for r in store.read_rows("distillates", "llm-cover")}
    for r in store.read_rows("distillates", "llm-cover"):
        rows[r.kind].append(json.loads(r.content))
    written = rows["cover_llm_inputs"]
    assert len(written) == 2
    for w in written:
        assert w["tokens_in"] > 50 and 0 < w["tokens_out"] <= recorded.max_tokens
        assert (w["why_none"] is None) == bool(w["inputs"]) and len(w["inputs"]) <= 4
    raw = [r.uri for r in store.read_rows("distillates", "llm-cover") if r.kind == "cover_llm_inputs"]
    assert all(store.get_blob(u.rsplit("/", 1)[-1]) for u in raw)
    assert {tuple(p["actions"]) for p in rows["cover_policy"] if p["role"] == "test"} == {
        ("fuzz", "edge", "small", "large", "llm")}
    empty = {w["prob_id"] for w in written if not w["inputs"]}
    assert not any(t["generator"] == "llm" and t["prob_id"] in empty for t in rows["cover_test"])
    assert recorded.finished(store, "llm-cover")


def toolsim_run(loop: str, recorded, **sections) -> RunConfig:
    """One round of a later loop on 5 instances per template, answers capped as above."""
    return RunConfig(loop=loop, suite="toolsim", budget=1, seed=0, workers=1, tracking=False, proposer="llm",
                     suite_params={"instances_per_template": 5},
                     evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens), **sections)


def unusable_rows(store, run_id: str) -> list:
    """The run's ``llm_unusable`` candidates, each a real call (tokens, raw answer) with its
    reason, never executed."""
    executed = {e.candidate_id for e in store.read_rows("executions", run_id)}
    rows = [c for c in store.read_rows("candidates", run_id) if c.operator == "llm_unusable"]
    for c in rows:
        record = json.loads(store.get_blob(c.candidate_id))
        assert c.tokens_in > 50 and c.tokens_out > 0 and c.candidate_id not in executed
        assert record["reason"] and record["answer"] is not None and "answer=" in c.summary
    return rows


def test_skilllift_one_llm_revision(prefect_server, served, recorded, tmp_path):
    """The reviser's one answer is either a visited skill (``llm_revise``) or an
    ``llm_unusable`` candidate; the cost table's framework tokens are the call's."""
    from flows.skilllift import skilllift

    config = toolsim_run("skilllift", recorded, skilllift={"inner_iterations": 1, "proposals": 1, "top_k": 1})
    skilllift(config=config, store_uri=str(tmp_path), run_id="llm-skilllift")
    store = open_store(str(tmp_path))
    rows = {}
    for r in store.read_rows("distillates", "llm-skilllift"):
        rows.setdefault(r.kind, []).append(json.loads(r.content))
    (inner,) = [c for c in rows["skilllift_cost"] if c["phase"] == "inner"]
    revised = [s for s in rows["skilllift_skills"] if s["operator"] == "llm_revise"]
    unusable = unusable_rows(store, "llm-skilllift")
    assert len(revised) + len(unusable) == 1 and inner["framework_tokens"] > 50
    assert recorded.finished(store, "llm-skilllift")


def test_graphskillevo_one_llm_mutation(prefect_server, served, recorded, tmp_path):
    """A skill program (entrypoint ``skill``): an answer that gives no valid skill is an
    invalid ``gse_skills`` row with its reason and an ``llm_unusable`` candidate with its
    call; a valid one is a candidate written by the llm that carries its call."""
    from flows.graphskillevo import graphskillevo

    config = toolsim_run("graphskillevo", recorded, graphskillevo={"population": 1, "offspring": 1,
                                                                    "operators": ["mutate"], "batch": 2})
    graphskillevo(config=config, store_uri=str(tmp_path), run_id="llm-gse")
    store = open_store(str(tmp_path))
    children = [s for s in store.read_rows("gse_skills", "llm-gse") if s.gen == 1]  # none: it repeated the seed
    written = [c for c in store.read_rows("candidates", "llm-gse") if c.proposer == "llm"]
    assert len(children) <= 1 and len(written) == 1 and written[0].tokens_out > 0
    if children and children[0].valid:
        assert written[0].operator == "llm_mutate" and written[0].candidate_id == children[0].candidate_id
    else:
        assert all(c.op == "llm_mutate" and c.reason for c in children) and unusable_rows(store, "llm-gse") == written
    assert recorded.finished(store, "llm-gse")


def test_arenaflow_one_llm_judged_match(prefect_server, served, recorded, tmp_path):
    """The judge's JSON verdict decides the match, or the rule comparator does and the match
    says why the answer was not used."""
    from flows.arenaflow import arenaflow

    config = RunConfig(loop="arenaflow", suite="toolsim", budget=1, seed=0, workers=1, tracking=False,
                       proposer="llm", suite_params={"instances_per_template": 5},
                       evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens),
                       arenaflow={"batch": 1, "group_size": 2})
    arenaflow(config=config, store_uri=str(tmp_path), run_id="llm-arena")
    store = open_store(str(tmp_path))
    (match,) = store.read_rows("af_matches", "llm-arena")
    assert match.judged_by == "llm" or match.judged_by.startswith("rule (llm answer unusable: ")
    assert match.winner in (match.a, match.b)
    assert recorded.finished(store, "llm-arena")
