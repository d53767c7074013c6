"""The perturbation operators and the two agents' tool choice."""

import pytest

from suites.toolsim.tools import TOOLS
from tasks.loops.trace.perturb import present, resolve, view


def test_rename_changes_every_name_and_maps_back():
    renamed = view("rename")
    assert renamed.shown_name["cancel_order"] == "t_cancel_order"
    assert renamed.canonical("t_cancel_order") == "cancel_order"
    assert renamed.canonical("cancel_order") is None
    assert renamed.description["t_cancel_order"] == "Cancel a placed order."


def test_agents_under_rename_semantic_follows_literal_breaks():
    renamed = view("rename")
    assert resolve("semantic", "cancel_order", renamed) == "t_cancel_order"
    assert resolve("literal", "cancel_order", renamed) == "cancel_order"
    assert renamed.canonical(resolve("literal", "cancel_order", renamed)) is None


def test_swapped_descriptions_mislead_the_semantic_agent_only():
    swapped = view("swap_descriptions")
    assert swapped.description["refund_order"] == TOOLS["cancel_order"].doc
    assert resolve("semantic", "cancel_order", swapped) == "refund_order"
    assert resolve("semantic", "get_order", swapped) == "list_orders"
    assert resolve("literal", "cancel_order", swapped) == "cancel_order"
    assert resolve("semantic", "send_message", swapped) == "send_message"


def test_reorder_keeps_fields_and_values_reverses_order():
    shown = present({"a": 1, "b": 2, "c": 3}, view("reorder"))
    assert list(shown) == ["c", "b", "a"] and shown == {"a": 1, "b": 2, "c": 3}
    assert list(present({"a": 1, "b": 2}, view("original"))) == ["a", "b"]


def test_unknown_condition_and_agent_are_named():
    with pytest.raises(ValueError, match="unknown trace condition 'typo'; known: original, rename"):
        view("typo")
    with pytest.raises(ValueError, match="unknown trace agent 'llm'"):
        resolve("llm", "get_order", view("original"))
