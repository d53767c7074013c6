"""The perturbation operators and the two agents' tool choice, pure.

A condition changes only what the agent is shown of the frozen toolsim tools (``TOOLS``):
the names, the descriptions or the order of a result's fields. ``ToolView`` is what an
agent sees; ``resolve`` is how each agent finds the tool for an intent (a canonical tool
name): the ``semantic`` agent by the tool's description, the ``literal`` agent by the name
it was written against. Swapped descriptions mislead the semantic agent: the positive
control, a known behaviour change that the protocol must detect."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from suites.toolsim.tools import TOOLS

CONDITIONS = ("original", "rename", "reorder", "swap_descriptions", "rerun")
"""``rerun`` is the original view run again under another seed of the event-keyed
failures: the identical-rerun noise floor."""
AGENTS = ("semantic", "literal")
SWAPPED = (("cancel_order", "refund_order"), ("get_order", "list_orders"))
"""The description pairs the positive control exchanges."""


@dataclass(frozen=True)
class ToolView:
    condition: str
    shown_name: Mapping[str, str]
    """canonical tool -> the name the agent is shown (and must call)."""
    description: Mapping[str, str]
    """shown name -> the description shown beside it."""
    reverse_fields: bool
    """Result fields are presented in reverse order."""

    def canonical(self, shown: str) -> str | None:
        """The canonical tool a shown name calls; None for a name the view does not have."""
        return next((c for c, s in self.shown_name.items() if s == shown), None)


def view(condition: str) -> ToolView:
    """The tools as shown under ``condition`` (ValueError naming the known conditions)."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown trace condition {condition!r}; known: {', '.join(CONDITIONS)}")
    names = {tool: (f"t_{tool}" if condition == "rename" else tool) for tool in sorted(TOOLS)}
    docs = {tool: TOOLS[tool].doc for tool in TOOLS}
    if condition == "swap_descriptions":
        for a, b in SWAPPED:
            docs[a], docs[b] = docs[b], docs[a]
    return ToolView(condition, names, {names[t]: docs[t] for t in names}, condition == "reorder")


def present(result: Mapping[str, Any], tool_view: ToolView) -> dict[str, Any]:
    """A tool result as the view presents it (same fields and values, maybe reordered)."""
    keys = list(result)
    return {k: result[k] for k in (reversed(keys) if tool_view.reverse_fields else keys)}


def resolve(agent: str, intent: str, tool_view: ToolView) -> str:
    """The shown name ``agent`` calls for ``intent``: ``semantic`` the tool whose shown
    description is the intent's own; ``literal`` the intent's canonical name as written,
    whether or not the view still has it."""
    if agent == "literal":
        return intent
    if agent == "semantic":
        wanted = TOOLS[intent].doc
        return next(shown for shown, doc in sorted(tool_view.description.items()) if doc == wanted)
    raise ValueError(f"unknown trace agent {agent!r}; known: {', '.join(AGENTS)}")
