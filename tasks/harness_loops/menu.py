"""A fixed menu of toolsim harness rules, the action space of the toolsim policies
(arenaflow's softmax policy; mass's workers and its distilled policy). Pure.

A trajectory is one toolsim episode under the harness its decisions build: per request,
the policy decides for every menu option whether to switch its rule on (a two-way
softmax per option, ``policy.py``). The menu mixes rules that serve some templates
(retries of injected faults, reading every page of orders, cancelling before refunding
a placed order) with rules that only cost steps (retrying what cannot succeed) or cut
information (reading one page only). Rule ids are the option ids, so a trajectory
step's ``via`` names the option that caused it (``arena.used_options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Option:
    option_id: str
    text: str
    """What the option does, in words: the skill text a library entry carries."""
    rule: dict[str, Any]


OPTIONS: tuple[Option, ...] = (
    Option("retry-transient", "retry a call that failed as transient_unavailable (up to 4 times, backoff 1)",
           {"trigger": {"on_error": "transient_unavailable", "tool": "*"}, "action": {"retry": {"max": 4, "backoff": 1}}}),
    Option("retry-rate-limited", "retry a rate_limited call after waiting (up to 3 times, backoff 2)",
           {"trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 3, "backoff": 2}}}),
    Option("paginate-orders", "read every page of list_orders (up to 10) before choosing an order",
           {"trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 10}}}),
    Option("cancel-before-refund", "when refund_order is refused as precondition_failed, cancel the order first",
           {"trigger": {"on_error": "precondition_failed", "tool": "refund_order"},
            "action": {"call_first": {"tool": "cancel_order"}}}),
    Option("one-page", "read only the first page of list_orders",
           {"trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 1}}}),
    Option("retry-not-found", "retry a not_found call after a long wait (up to 5 times, backoff 8)",
           {"trigger": {"on_error": "not_found", "tool": "*"}, "action": {"retry": {"max": 5, "backoff": 8}}}),
)
OPTION_IDS: tuple[str, ...] = tuple(o.option_id for o in OPTIONS)


def harness_document(choices: Sequence[int], options: Sequence[Option] = OPTIONS) -> dict[str, Any]:
    """The harness of one decision vector (1 = the option's rule is on), rules in menu order."""
    if len(choices) != len(options):
        raise ValueError(f"rule menu: {len(choices)} decisions for a menu of {len(options)} options")
    return {"version": 1, "skills": [],
            "rules": [{"id": o.option_id, **o.rule} for o, on in zip(options, choices) if on]}


def option_text(option_id: str) -> str:
    return next(o.text for o in OPTIONS if o.option_id == option_id)
