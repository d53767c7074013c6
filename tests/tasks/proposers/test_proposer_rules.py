"""The rules proposer on real toolsim trajectories: every trace below comes from running
the actual agent on the suite's cases (ToolSim defaults: seed 0, fault_rate 0.15)."""

import random

import pytest

from suites.toolsim import ToolSim
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from tasks.proposers.rule_evidence import Trace, failure_point, retry_chains, trace_of, unfollowed_cursors
from tasks.proposers.rules import Evidence, NoRuleEvidence, RuleProposal, RuleProposer, Trial, edit_key
from tasks.proposers.skill_operators import GAP_THRESHOLD, extract_skill, gap_skill

SEED = {"version": 1, "rules": [], "skills": []}
CASES = ToolSim().cases()
TRAIN = [c for c in CASES if c.split == "train"]
TEST = [c for c in CASES if c.split == "test"]


def run(document, cases) -> list[Trace]:
    harness = load_harness(document)
    return [trace_of(c.case_id, c.payload, run_episode(c.payload, harness)) for c in cases]


def of(template, cases=TRAIN):
    return [c for c in cases if c.payload["template"] == template]


def rule_of(proposal: RuleProposal) -> dict:
    return next(r for r in proposal.document["rules"] if r["id"] == proposal.target)


def propose(traces, document=SEED, seed=0, rejected=()) -> RuleProposal:
    proposal = RuleProposer().propose(Evidence.of(traces, rejected), document, random.Random(seed))
    load_harness(proposal.document)  # the edited document is a valid harness
    return proposal


def succeeded(document, case_ids) -> set[str]:
    cases = [c for c in CASES if c.case_id in case_ids]
    return {t.case_id for t in run(document, cases) if t.success}


@pytest.fixture(scope="module")
def seed_train():
    return run(SEED, TRAIN)


def test_available():
    assert RuleProposer().available() == (True, "")


def test_refund_unshipped_failures_propose_cancel_order_before_refund_order():
    traces = run(SEED, of("refund_unshipped_order"))
    proposal = propose(traces)
    assert proposal.operator == "precondition"
    assert rule_of(proposal) == {"id": "cancel_order-before-refund_order",
                                 "trigger": {"on_error": "precondition_failed", "tool": "refund_order"},
                                 "action": {"call_first": {"tool": "cancel_order"}}}
    assert proposal.triggers == tuple(f"refund_unshipped_order/{i:03d}" for i in (0, 5, 10, 15, 16, 19))
    assert proposal.rationale.startswith(
        "6 of 8 failures on refund_unshipped_order hit precondition_failed from refund_order")
    # 005's cancel_order then draws an injected transient fault: a retry rule's job, not this one's
    assert succeeded(proposal.document, proposal.triggers) == set(proposal.triggers) - {"refund_unshipped_order/005"}


def test_cancel_latest_failures_propose_pagination():
    traces = run(SEED, of("cancel_latest_order"))
    proposal = propose(traces)
    assert proposal.operator == "paginate"
    assert rule_of(proposal)["trigger"] == {"before": "list_orders"}
    assert all("list_orders" in unfollowed_cursors(t) for t in traces if t.case_id in proposal.triggers)
    assert succeeded(proposal.document, proposal.triggers) == set(proposal.triggers)


def test_every_known_failure_mode_of_the_seed_gets_its_rule(seed_train):
    candidates = RuleProposer().candidates(Evidence.of(seed_train), SEED)
    items = {(c.operator, c.item.get("id") or c.item["name"]): c.item for c in candidates}
    assert items[("retry_on_error", "retry-transient_unavailable")]["trigger"] == {
        "on_error": "transient_unavailable", "tool": "*"}
    assert items[("switch_tool", "search_users-instead-of-find_user_by_email")]["action"] == {
        "switch_tool": {"tool": "search_users", "args": {"query": "$email"}}}
    assert items[("switch_tool", "create_ticket-instead-of-reserve_item")]["action"] == {
        "switch_tool": {"tool": "create_ticket", "args": {"subject": "backorder ticket"}}}
    assert ("paginate", "paginate-list_orders") in items
    assert ("precondition", "cancel_order-before-refund_order") in items
    assert ("gap_skill", "refund_damaged_item-by-product_name") in items
    assert candidates[0].operator == "retry_on_error" and candidates[0].support == 11
    for candidate in candidates:
        assert candidate.triggers and set(candidate.triggers) <= {t.case_id for t in seed_train if not t.success}


def test_gap_pool_needs_three_occurrences_before_a_skill():
    completed = [t for t in run(SEED, of("refund_damaged_item")) if failure_point(t) is None]
    assert len(completed) == 5
    assert gap_skill(Evidence.of(completed[: GAP_THRESHOLD - 1]), SEED) == []
    [candidate] = gap_skill(Evidence.of(completed[:GAP_THRESHOLD]), SEED)
    assert candidate.operator == "gap_skill" and candidate.support == GAP_THRESHOLD
    assert candidate.item["steps"] == [
        {"call": "get_order"},
        {"pick": {"from": "items", "where": {"name": "$product_name"}}},
        {"call": "refund_order", "args": {"reason": "damaged", "product_id": "$product_id"}},
    ]
    proposal = propose(completed[:GAP_THRESHOLD])
    assert proposal.operator == "gap_skill"
    assert succeeded(proposal.document, proposal.triggers) == set(proposal.triggers)


def test_follow_up_escalates_only_under_the_condition_that_separates_failures():
    traces = run(SEED, of("open_ticket", CASES))
    completed = [t for t in traces if t.success or failure_point(t) is None]
    proposal = propose(completed)
    assert proposal.operator == "follow_up"
    assert rule_of(proposal)["trigger"] == {"after": "create_ticket", "when": {"var": "tier", "equals": "vip"}}
    after = {t.case_id: t.success for t in run(proposal.document, of("open_ticket", CASES))}
    assert all(after[case_id] for case_id in proposal.triggers)
    assert all(after[t.case_id] for t in traces if t.success)  # no standard customer escalated


def test_a_stale_read_gets_a_reread():
    traces = run(SEED, of("order_status_message", CASES))
    stale = [t for t in traces if t.success or failure_point(t) is None]
    proposal = propose(stale)
    assert proposal.operator == "reread"
    assert rule_of(proposal)["trigger"] == {"on_result": "get_order", "field": "stale", "equals": True}
    assert succeeded(proposal.document, proposal.triggers) == {"order_status_message/008"}


def test_a_rate_limit_retry_that_keeps_failing_is_revised_until_it_waits_long_enough():
    document = {"version": 1, "rules": [{"id": "wait", "trigger": {"on_error": "rate_limited"},
                                         "action": {"retry": {"max": 1}}}]}
    backoffs = []
    for _ in range(2):
        traces = [t for t in run(document, TRAIN) if t.success or retry_chains(t, "wait", "rate_limited")]
        proposal = propose(traces, document)
        assert proposal.operator == "revise_rule" and proposal.target == "wait"
        document = proposal.document
        backoffs.append(rule_of(proposal)["action"]["retry"]["backoff"])
    assert backoffs == [1, 2]
    assert "a retry 1 tick(s) after the failed call still failed" in proposal.rationale
    replay = run(document, [c for c in CASES if c.case_id in proposal.triggers])
    assert not any(t.steps[-1]["ok"] is False and '"rate_limited"' in t.steps[-1]["result_json"] for t in replay)
    assert {t.case_id for t in replay if t.success} == {"apply_coupon/010"}  # the others have other gaps too


def test_a_transient_retry_that_fails_by_chance_gets_more_attempts():
    cases = [c for c in ToolSim(fault_rate=0.6).cases() if c.split == "train"]
    document = {"version": 1, "rules": [{"id": "again", "trigger": {"on_error": "transient_unavailable"},
                                         "action": {"retry": {"max": 1}}}]}
    traces = run(document, cases)
    chains = [c for t in traces for c in retry_chains(t, "again", "transient_unavailable")]
    assert 0 < sum(still for still, _ in chains) < len(chains) / 2
    revisions = [c for c in RuleProposer().candidates(Evidence.of(traces), document) if c.operator == "revise_rule"]
    assert [c.item["action"] for c in revisions] == [{"retry": {"max": 2}}]


def test_a_rejected_retry_comes_back_with_the_backoff_its_replay_showed(seed_train):
    eager = next(c for c in RuleProposer().candidates(Evidence.of(seed_train), SEED)
                 if c.item.get("id") == "retry-rate_limited")
    assert eager.item["action"] == {"retry": {"max": 2}}
    proposal = RuleProposal(SEED | {"rules": [eager.item]}, eager.triggers, eager.rationale, eager.operator,
                            edit_key(eager), "retry-rate_limited", eager.support)
    trial = Trial(proposal, tuple(run(proposal.document, TRAIN)))
    candidates = RuleProposer().candidates(Evidence.of(seed_train, [trial]), SEED)
    revised = next(c for c in candidates if c.operator == "revise_rule")
    assert revised.edit == "add_rule" and revised.item["action"] == {"retry": {"max": 2, "backoff": 2}}
    assert "a retry 1 tick(s) after the failed call still failed" in revised.rationale


def test_a_rule_whose_own_action_fails_is_removed():
    switch = {"switch_tool": {"tool": "get_user", "args": {"user_id": "$email"}}}
    trigger = {"on_error": "not_found", "tool": "find_user_by_email"}
    document = {"version": 1, "rules": [{"id": "by-id", "trigger": trigger, "action": switch}]}
    traces = run(document, TRAIN)
    ended = [t for t in traces if not t.success and '"via": "by-id"' in t.steps[-1]["result_json"]]
    proposal = propose(ended + [t for t in traces if t.success], document)
    assert proposal.operator == "remove_rule" and proposal.target == "by-id"
    assert proposal.document["rules"] == []
    assert proposal.triggers == ("cancel_latest_order/005", "cancel_latest_order/019", "open_ticket/015",
                                 "reserve_stock/010")  # the customers who wrote from an alias


def test_a_procedure_from_a_rejected_harness_becomes_a_skill(seed_train):
    blunt = {"version": 1, "rules": [{"id": "cancel-first", "trigger": {"before": "refund_order"},
                                      "action": {"call_first": {"tool": "cancel_order"}}}]}
    replay = run(blunt, TRAIN)
    trial = Trial(RuleProposal(blunt, (), "", "precondition", "blunt", "cancel-first", 0), tuple(replay))
    [candidate] = [c for c in extract_skill(Evidence.of(seed_train, [trial]), SEED)
                   if c.item["trigger"]["template"] == "refund_unshipped_order"]
    assert candidate.item["steps"] == [
        {"call": "get_order"},
        {"call": "cancel_order", "args": {"reason": "customer request"}},
        {"call": "refund_order", "args": {"reason": "customer request"}},
    ]
    assert not any(c.item["trigger"]["template"] == "refund_damaged_item"
                   for c in extract_skill(Evidence.of(seed_train, [trial]), SEED))  # the rule broke it there
    skilled = SEED | {"skills": [candidate.item]}
    assert succeeded(skilled, candidate.triggers) >= {f"refund_unshipped_order/{i:03d}" for i in (0, 10, 15, 16, 19)}


def test_same_rng_same_proposal_and_ties_are_broken_by_the_rng():
    refunds = [t for t in run(SEED, of("refund_unshipped_order")) if "precondition" in t.steps[-1]["result_json"]]
    latest = [t for t in run(SEED, of("cancel_latest_order")) if unfollowed_cursors(t)]
    evidence = refunds[:3] + latest[:3]
    chosen = {propose(evidence, seed=s).operator for s in range(12)}
    assert chosen == {"precondition", "paginate"}
    for s in range(5):
        assert propose(evidence, seed=s) == propose(evidence, seed=s)


def test_rejected_edits_are_not_proposed_again():
    traces = run(SEED, of("refund_unshipped_order"))
    trials, operators = [], []
    while True:
        try:
            proposal = propose(traces, rejected=trials)
        except NoRuleEvidence as exc:
            assert "rejected edits excluded" in str(exc)
            break
        operators.append(proposal.operator)
        trials.append(Trial(proposal, ()))
    assert len({t.proposal.key for t in trials}) == len(trials)
    assert operators[0] == "precondition" and set(operators) >= {"precondition", "retry_on_error"}


def test_no_failures_no_proposal(seed_train):
    with pytest.raises(NoRuleEvidence):
        propose([t for t in seed_train if t.success])


def greedy(steps: int) -> tuple[dict, list[tuple[str, int, bool]]]:
    """Propose, apply, re-run train; keep an edit only when train successes go up."""
    document, current, trials, log = SEED, run(SEED, TRAIN), [], []
    rng = random.Random(0)
    for _ in range(steps):
        try:
            proposal = RuleProposer().propose(Evidence.of(current, trials), document, rng)
        except NoRuleEvidence:
            break
        replay = run(proposal.document, TRAIN)
        accepted = sum(t.success for t in replay) > sum(t.success for t in current)
        log.append((proposal.operator, sum(t.success for t in replay), accepted))
        if accepted:
            document, current = proposal.document, replay
        else:
            trials.append(Trial(proposal, tuple(replay)))
    return document, log


def test_greedy_propose_apply_gate_loop_raises_success():
    assert sum(t.success for t in run(SEED, TRAIN)) == 24  # of 64
    assert sum(t.success for t in run(SEED, TEST)) == 9  # of 24
    document, log = greedy(12)
    assert log == [
        ("retry_on_error", 28, True), ("precondition", 35, True), ("paginate", 42, True),
        ("gap_skill", 49, True), ("switch_tool", 51, True), ("retry_on_error", 51, False),
        ("revise_rule", 56, True), ("switch_tool", 62, True), ("follow_up", 64, True),
    ]
    assert sum(t.success for t in run(document, TEST)) == 24
