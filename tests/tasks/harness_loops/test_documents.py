"""Harness documents as every harness loop stores them: one program per document (so a
harness is the same candidate in every loop), read back without running it."""

import pytest

from schemas.ids import content_id
from tasks.harness_loops.documents import added_tool, harness_source, literal_document

RULE = {"id": "retry-503", "trigger": {"on_error": "transient_unavailable", "tool": "get_order"},
        "action": {"retry": {"max": 2}}}
OTHER = {"id": "wait", "trigger": {"on_error": "rate_limited", "tool": "list_orders"}, "action": {"wait": 1}}
SKILL = {"name": "cancel", "trigger": {"template": "cancel_latest_order"}, "steps": []}
BASE = {"version": 1, "rules": [RULE], "skills": []}


def test_a_document_round_trips_through_its_program():
    for document in (BASE, {"version": 1, "rules": [], "skills": [SKILL]}, {"version": 1, "rules": [], "skills": []}):
        assert literal_document(harness_source(document)) == document


def test_equal_documents_are_equal_candidates_whatever_their_key_order():
    shuffled = {"skills": [], "rules": [dict(reversed(list(RULE.items())))], "version": 1}
    assert harness_source(shuffled) == harness_source(BASE)
    assert content_id(harness_source(shuffled)) == content_id(harness_source(BASE))
    assert harness_source(BASE).startswith('"""A toolsim harness document."""\n\n\ndef harness():\n    return {')


@pytest.mark.parametrize("source, message", [
    ("def harness():\n    return build()\n", "does not return one literal"),
    ("def other():\n    return {}\n", "does not return one literal"),
    ("def harness():\n    return [1, 2]\n", "returns a list, not a mapping"),
])
def test_a_program_that_is_not_one_literal_is_refused(source, message):
    with pytest.raises(ValueError, match=message):
        literal_document(source)


def test_added_tool_finds_exactly_one_new_rule_or_skill():
    assert added_tool(BASE, {**BASE, "rules": [RULE, OTHER]}) == ("add_rule", OTHER)
    assert added_tool(BASE, {**BASE, "skills": [SKILL]}) == ("put_skill", SKILL)
    assert added_tool(BASE, {**BASE, "rules": [RULE, OTHER], "skills": [SKILL]}) is None  # two tools
    assert added_tool(BASE, {**BASE, "rules": [OTHER]}) is None  # drops a stable rule
    assert added_tool(BASE, BASE) is None  # adds nothing
    copy = dict(OTHER, id="wait-2", note="same body")  # ids and notes do not make a rule new
    assert added_tool({**BASE, "rules": [RULE, OTHER]}, {**BASE, "rules": [RULE, OTHER, copy]}) is None
