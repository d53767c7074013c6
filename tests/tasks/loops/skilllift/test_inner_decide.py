"""SkillLift's inner loop (mutations, hill climbing on a frozen rubric) and its real gate."""

import json
import random

from suites.toolsim.harness import parse_harness
from tasks.gate.stats import kendall
from tasks.loops.skilllift.calibrate import agreement
from tasks.loops.skilllift.decide import challenger, decide
from tasks.loops.skilllift.inner import catalogue, hill_climb, mutate, rubric_scorer, rule_reviser, skill_id, top_k
from tasks.loops.skilllift.rubric import covers_item

SEED = {"version": 1, "rules": [], "skills": []}


def test_the_catalogue_holds_a_wildcard_retry_per_error_code_without_duplicates():
    rules = catalogue([], SEED)
    assert [r["id"] for r in rules] == [f"retry-any-{c}" for c in (
        "invalid_argument", "not_found", "precondition_failed", "rate_limited", "transient_unavailable", "unknown_tool")]


def test_every_mutation_parses_and_changes_the_skill():
    rng, rules = random.Random(0), catalogue([], SEED)
    document, seen = SEED, set()
    for _ in range(40):
        document, op = mutate(document, rules, rng)
        parse_harness(document)
        seen.add(op)
    assert seen == {"add", "remove", "retry_max"} | ({"widen"} & seen)
    assert mutate(SEED, [], rng) is None  # nothing to add, nothing to remove or tune


def test_hill_climbing_on_the_rubric_reaches_the_covered_skill_without_running_anything():
    rubric = [covers_item("on_error", "get_order", "transient_unavailable", 1.0),
              {"id": "c", "kind": "concise", "limit": 1, "weight": 0.5}]
    visited = hill_climb(SEED, rubric_scorer(rubric), rule_reviser(catalogue([], SEED)), 12, 4, random.Random(1))
    best = top_k(visited, 1, set())[0]
    assert best.rubric_score == 1.0  # covered, one rule
    assert [r["id"] for r in best.document["rules"]] == ["retry-any-transient_unavailable"]
    assert visited[0].skill_id == skill_id(SEED) and visited[0].operator == "start"
    assert len({v.skill_id for v in visited}) == len(visited)
    assert top_k(visited, 2, {best.skill_id})[0].skill_id != best.skill_id


def test_the_gate_picks_by_real_success_not_by_rubric():
    real = {"champ": {"a": 0.0, "b": 1.0, "c": 0.0}, "x": {"a": 1.0, "b": 1.0, "c": 1.0},
            "y": {"a": 1.0, "b": 0.0, "c": 0.0}}
    rubric = {"champ": 0.2, "x": 0.1, "y": 0.9}
    corr = agreement([2 / 3, 1.0, 1 / 3], [0.2, 0.1, 0.9])
    best, outcome = decide(real, rubric, "champ", corr, 0.0, seed=0)
    assert best == "x" and outcome.decision == "accept"
    assert outcome.delta == 2 / 3 and outcome.improved_cases == ["a", "c"] and outcome.regressed_cases == []
    evidence = json.loads(outcome.evidence_json)
    assert evidence["old_champion"] == "champ" and evidence["rubric_score"]["y"] == 0.9
    # every pair of the three is ordered the other way by the rubric
    assert evidence["kendall"] == kendall([2 / 3, 1.0, 1 / 3], [0.2, 0.1, 0.9]) == -1.0


def test_a_tie_keeps_the_champion():
    real = {"b": {"a": 1.0}, "champ": {"a": 1.0}}
    assert challenger(real, "champ") == "champ"
    _, outcome = decide(real, {"b": 1.0, "champ": 0.0}, "champ", agreement([1.0, 1.0], [1.0, 0.0]), 0.0, 0)
    assert outcome.decision == "reject" and json.loads(outcome.evidence_json)["kendall"] is None


def test_the_llm_brief_is_the_prompt_file_with_the_rubric_filled_in():
    from tasks.loops.skilllift.llm import rubric_brief
    from tasks.proposers.llm import load_prompt

    text = rubric_brief([{**covers_item("on_error", "get_order", "not_found", 0.5), "weight": -0.25}])
    assert text.startswith(load_prompt("skilllift_revise.txt").split("{rubric}")[0])
    assert text.endswith("- covers:on_error:get_order:not_found (-0.250): recovers when get_order fails with not_found")


def test_an_answer_that_is_no_harness_is_an_llm_unusable_candidate_with_its_call(chat_endpoint, tmp_path):
    """A fence cut off mid-program is no proposal; the round keeps it (reason, raw answer
    and the call's tokens), and it is never executed."""
    from schemas.configs import EvolveConfig
    from tasks.loops.skilllift.llm import LLMReviser, refused_rows, reviser_tokens
    from tasks.runtime.context import RunRef
    from storage.store import open_store

    answer = "To cover the rubric, add a retry rule:\n```python\ndef harness():\n    return {\"version\": 1,"
    chat_endpoint.answers += [answer, answer]
    revise = LLMReviser([{**covers_item("on_error", "get_order", "not_found", 0.5), "weight": 0.5}], EvolveConfig())
    assert revise(SEED, random.Random(0)) is None and revise(SEED, random.Random(1)) is None
    assert (revise.calls, revise.unusable, reviser_tokens(revise)) == (2, 2, 30)
    rows = refused_rows(RunRef(store_uri=str(tmp_path), run_id="r"), 1, revise)
    assert len(rows) == 1  # the same answer to the same skill is one record
    (row,) = rows
    assert (row.operator, row.artifact_kind, row.parent_ids, row.tokens_in, row.tokens_out) == (
        "llm_unusable", "llm_answer", [skill_id(SEED)], 10, 5)
    record = json.loads(open_store(str(tmp_path)).get_blob(row.candidate_id))
    assert record["answer"] == answer and record["reason"].startswith("the llm's answer is not a valid harness")
    assert refused_rows(RunRef(store_uri=str(tmp_path), run_id="r"), 1, rule_reviser([])) == []
