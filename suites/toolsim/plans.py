"""The strategy-free default plans: what the agent does for a request when no skill
covers its template.

Each plan is the obvious tool sequence written in the skill step format of
``harness.py`` (so a proposer can copy one into a skill and repair it): look the customer
up, read page 1, act once. No retries, no precondition checks, no paging, no
verification: those are what rules and skills add. Known gaps, by design:

- ``cancel_latest_order``, ``change_address``: read page 1 only, so an order past page 1
  is missed (cancel_latest may then cancel the wrong order, a guard violation);
- ``refund_unshipped_order``: refunds without cancelling first (``precondition_failed``);
- ``refund_damaged_item``: refunds the whole order instead of the damaged line item;
- ``reserve_stock``: gives up when stock is short instead of opening a backorder ticket;
- ``open_ticket``: never escalates, which VIP customers need;
- ``order_status_message``: trusts a stale read;
- every plan that looks a customer up by email fails for alias addresses, and every
  plan fails on the first injected fault.
"""

from __future__ import annotations

CANCEL_LATEST_ORDER = (
    {"call": "find_user_by_email"},
    {"call": "list_orders", "args": {"page": 1}},
    {"pick": {"from": "orders", "order_by": "created", "take": "last"}},
    {"call": "cancel_order", "args": {"reason": "customer request"}},
)
REFUND_UNSHIPPED_ORDER = (
    {"call": "get_order"},
    {"call": "refund_order", "args": {"reason": "customer request"}},
)
REFUND_DAMAGED_ITEM = (
    {"call": "get_order"},
    {"call": "refund_order", "args": {"reason": "damaged"}},
)
CHANGE_ADDRESS = (
    {"call": "find_user_by_email"},
    {"call": "list_orders", "args": {"page": 1}},
    {"pick": {"from": "orders", "where": {"product_names": "$product_name"}, "take": "first"}},
    {"call": "update_address", "args": {"address": "$new_address"}},
)
RESERVE_STOCK = (
    {"call": "find_user_by_email"},
    {"call": "search_products", "args": {"query": "$product_name"}},
    {"pick": {"from": "products", "take": "first"}},
    {"call": "reserve_item"},
)
OPEN_TICKET = (
    {"call": "find_user_by_email"},
    {"call": "create_ticket"},
)
APPLY_COUPON = ({"call": "apply_coupon"},)
ORDER_STATUS_MESSAGE = (
    {"call": "get_order"},
    {"call": "send_message", "args": {"text": "Your order $order_id is $status."}},
)
