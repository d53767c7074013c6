from collections import Counter
from pathlib import Path

import pytest

from suites.base import Case
from suites.executors import InProcessExecutor
from suites.toolsim import ToolSim
from suites.toolsim.suite import SCORER_MODULES, reseeded

# A hand-written harness that serves every request of the pinned seed. Each rule closes one gap of
# the default plans (suites/toolsim/plans.py), which is why it beats the seed harness:
#   retry-transient / backoff-on-rate-limit: the default plans give up on the first
#     injected fault; a rate limit needs a wait of 2 ticks, not just a retry;
#   alias-lookup: 20% of customers write from an alias, which find_user_by_email misses;
#   read-all-pages: the latest order, and the order to re-address, are often past page 1;
#   cancel-before-refund: a placed order must be cancelled before it can be refunded;
#   backorder-when-short: when stock is short the customer needs a backorder ticket;
#   escalate-vip: VIP tickets must be escalated (and only theirs);
#   reread-stale-order: a stale replica read would tell the customer an old status;
#   the refund-damaged-line skill refunds the damaged line item, not the whole order.
GOOD_HARNESS = """
version: 1
rules:
  - id: retry-transient
    trigger: {on_error: transient_unavailable, tool: "*"}
    action: {retry: {max: 3}}
  - id: backoff-on-rate-limit
    trigger: {on_error: rate_limited}
    action: {retry: {max: 2, backoff: 2}}
  - id: alias-lookup
    trigger: {on_error: not_found, tool: find_user_by_email}
    action: {switch_tool: {tool: search_users, args: {query: $email}}}
  - id: read-all-pages
    trigger: {before: list_orders}
    action: {paginate: {max_pages: 10}}
  - id: cancel-before-refund
    trigger: {on_error: precondition_failed, tool: refund_order}
    action: {call_first: {tool: cancel_order, args: {reason: customer request}}}
  - id: backorder-when-short
    trigger: {on_error: precondition_failed, tool: reserve_item}
    action: {switch_tool: {tool: create_ticket, args: {subject: backorder $product_name, product_id: $product_id}}}
  - id: escalate-vip
    trigger: {after: create_ticket, when: {var: tier, equals: vip}}
    action: {then_call: {tool: escalate_ticket}}
  - id: reread-stale-order
    trigger: {on_result: get_order, field: stale, equals: true}
    action: {retry: {max: 2}}
skills:
  - name: refund-damaged-line
    trigger: {template: refund_damaged_item}
    steps:
      - call: get_order
      - pick: {from: items, where: {name: $product_name}}
      - call: refund_order
        args: {reason: damaged, product_id: $product_id}
"""

# Successes out of 20 instances per template, ToolSim() defaults (seed 0, fault_rate 0.15).
SEED_SUCCESSES = {
    "cancel_latest_order": 3,  # page 1 holds the latest order only for users with <= 5 orders
    "refund_unshipped_order": 0,  # refund before cancellation: precondition_failed
    "refund_damaged_item": 0,  # refunds the whole order: the over-refund guard breaks
    "change_address": 9,  # the order is found only when it is on page 1
    "reserve_stock": 3,  # short stock, aliases and faults
    "open_ticket": 7,  # VIPs are never escalated
    "apply_coupon": 16,  # only injected faults stand in the way
    "order_status_message": 16,  # faults and stale reads
}
GOOD_SUCCESSES = dict.fromkeys(SEED_SUCCESSES, 20)


def _successes(suite, output):
    counts = Counter()
    for case in suite.cases():
        counts[case.payload["template"]] += int(suite.score(case, output).metrics["success"])
    return dict(counts)


@pytest.fixture(scope="module")
def suite():
    return ToolSim()


def test_seed_and_good_harness_success_rates_are_pinned(suite):
    assert _successes(suite, {"harness": {"version": 1, "rules": [], "skills": []}}) == SEED_SUCCESSES
    assert _successes(suite, {"harness": GOOD_HARNESS}) == GOOD_SUCCESSES
    assert sum(SEED_SUCCESSES.values()) / 160 == 0.3375


def test_splits_counts():
    assert Counter(c.split for c in ToolSim().cases()) == {
        "train": 64, "select": 24, "protected": 24, "holdout": 24, "test": 24}
    small = ToolSim(instances_per_template=5).cases()
    assert len(small) == 40
    assert Counter(c.split for c in small) == dict.fromkeys(["train", "select", "protected", "holdout", "test"], 8)


def test_cases_are_deterministic_and_depend_on_the_seed():
    first, again, other = ToolSim().cases(), ToolSim().cases(), ToolSim(seed=1).cases()
    assert first == again
    assert [c.case_id for c in first] == [c.case_id for c in other]
    assert [c.payload for c in first] != [c.payload for c in other]
    assert len({c.case_id for c in first}) == len(first)
    assert set(first[0].payload) == {"template", "index", "world_seed", "params", "noise_seed", "fault_rate",
                                      "flip_rate", "max_steps"}


def test_score_is_deterministic(suite):
    case = suite.cases()[0]
    output = {"harness": GOOD_HARNESS}
    assert suite.score(case, output) == suite.score(case, output)
    assert suite.episode(case, output).steps == suite.episode(case, output).steps


def test_score_ignores_any_claimed_success(suite):
    case = next(c for c in suite.cases() if c.payload["template"] == "refund_unshipped_order")
    honest = {"harness": {"version": 1}}
    boasting = {**honest, "success": 1.0, "goal_met": True, "progress": 1.0, "final_state_digest": "x",
                "trajectory": [{"kind": "tool_call", "name": "refund_order", "ok": True}]}
    assert suite.score(case, boasting) == suite.score(case, honest)
    assert suite.score(case, boasting).metrics["success"] == 0.0


@pytest.mark.parametrize("output, reason", [
    (None, "output: must be a mapping with a 'harness' entry"),
    ({"success": 1.0}, "output: must be a mapping with a 'harness' entry"),
    ({"harness": {"version": 1, "rules": [{"trigger": {"on_error": "oops"}, "action": {}}]}},
     "rules[0].trigger.on_error: unknown error code 'oops'"),
])
def test_invalid_output_scores_the_floor_with_the_reason(suite, output, reason):
    case = suite.cases()[0]
    verdict = suite.score(case, output)
    assert not verdict.valid and verdict.reason.startswith(reason)
    assert verdict.metrics == {"success": 0.0, "observed_success": 0.0, "progress": 0.0, "tool_calls": 0.0,
                               "cost": 3.0}
    assert set(verdict.metrics) == set(suite.score(case, {"harness": {"version": 1}}).metrics)


def test_seed_program_and_runner_through_an_executor(suite):
    cases = suite.cases()[:3]
    yaml_program = f"TEXT = {GOOD_HARNESS!r}\n\ndef harness():\n    return TEXT\n"
    executor = InProcessExecutor()
    for program, expected in ((suite.seed_program(), {"version": 1, "rules": [], "skills": []}),
                              (yaml_program, GOOD_HARNESS)):
        results = executor.run(program, suite.runner_source(), suite.entrypoint, cases)
        assert [r.status for r in results] == ["ok"] * 3
        assert all(r.output == {"harness": expected} for r in results)
        assert all(suite.score(c, r.output).valid for c, r in zip(cases, results))


def test_reseeded_changes_only_the_noise(suite):
    case = suite.cases()[0]
    other = reseeded(case, 99)
    assert isinstance(other, Case) and other.case_id == case.case_id
    assert {k: v for k, v in other.payload.items() if k != "noise_seed"} == {
        k: v for k, v in case.payload.items() if k != "noise_seed"}
    assert other.payload["noise_seed"] == 99


def test_scorer_version_covers_every_module_of_the_simulation(suite):
    package = Path(__file__).resolve().parents[3] / "suites" / "toolsim"
    assert set(SCORER_MODULES) == {p.stem for p in package.glob("*.py")} - {"__init__"}
    assert len(suite.scorer_version()) == 16


def test_contract_attributes(suite):
    assert (suite.name, suite.primary_metric, suite.entrypoint, suite.artifact_kind) == (
        "toolsim", "success", "harness", "rules")
    assert suite.normalize(0.25) == 0.25


@pytest.mark.parametrize("params, message", [
    ({"instances_per_template": 0}, "instances_per_template must be >= 1"),
    ({"fault_rate": 1.5}, "fault_rate must be in"),
    ({"flip_rate": -0.1}, "flip_rate must be in"),
    ({"max_steps": 0}, "max_steps must be in 1..200"),
])
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        ToolSim(**params)
