import json
import random

import pytest

from schemas.ids import content_id
from tasks.harness_loops.menu import OPTION_IDS
from tasks.loops.mass.workflow import (
    FIELDS, OPERATORS, WORKERS, Workflow, acting, applicable, children, decisions, from_spec, harness_of, mutate,
)


def test_a_worker_acts_only_when_the_planner_returns_its_field():
    wf = Workflow(("pager", "retrier", "refunder"), ("order_state", "error_code"))
    assert wf.contract == ("error_code", "order_state")
    assert acting(wf) == ("retrier", "refunder")
    # menu order: retry-transient, retry-rate-limited, paginate-orders, cancel-before-refund, one-page, retry-not-found
    assert decisions(wf) == (1, 0, 0, 1, 0, 0)
    assert [r["id"] for r in harness_of(wf)["rules"]] == ["retry-transient", "cancel-before-refund"]


def test_the_harness_keeps_the_workflows_call_order():
    wf = Workflow(("skimmer", "pager"), ("order_pages",))
    assert [r["id"] for r in harness_of(wf)["rules"]] == ["one-page", "paginate-orders"]
    assert decisions(wf) == decisions(Workflow(("pager", "skimmer"), ("order_pages",)))


def test_the_id_is_the_sha256_of_the_spec_and_the_spec_round_trips():
    wf = Workflow(("waiter",), ("error_code",))
    assert wf.wf_id == content_id('{"planner": {"returns": ["error_code"]}, "workers": ["waiter"]}')
    assert from_spec(wf.spec_json()) == wf
    assert Workflow().wf_id != wf.wf_id
    assert decisions(Workflow()) == (0,) * len(OPTION_IDS)


def test_unknown_or_repeated_roles_are_refused():
    with pytest.raises(ValueError):
        Workflow(("pager", "pager"))
    with pytest.raises(ValueError):
        Workflow(("oracle",))
    with pytest.raises(ValueError):
        Workflow((), ("secret",))


def test_each_operator_changes_exactly_what_it_says():
    rng = random.Random(3)
    wf = Workflow(("pager", "retrier"), ("order_pages",))
    added = mutate(wf, "add_role", rng)
    assert len(added.workers) == 3 and set(wf.workers) < set(added.workers)
    assert len(mutate(wf, "drop_role", rng).workers) == 1
    assert mutate(wf, "reorder", rng).workers == ("retrier", "pager")
    assert len(mutate(wf, "add_field", rng).contract) == 2
    assert mutate(wf, "drop_field", rng).contract == ()


def test_structural_constraints_limit_the_operators():
    full = Workflow(("pager", "retrier"), FIELDS)
    assert not applicable(full, "add_role", 2) and not applicable(full, "add_field", 2)
    assert [op for op in OPERATORS if applicable(Workflow(), op, 4)] == ["add_role", "add_field"]
    kids = children(full, 20, 2, random.Random(0))
    assert all(op in ("drop_role", "reorder", "drop_field") and len(k.workers) <= 2 for op, k in kids)
    assert len(WORKERS) == 6 and json.loads(full.spec_json())["planner"]["returns"] == list(FIELDS)
