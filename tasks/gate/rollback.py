"""One way to publish a gate decision inside a Prefect transaction: remember which
gate_decisions part the stage wrote, so that the transaction's rollback (a failed
register) un-publishes exactly that part and a resumed run re-decides identically."""

from __future__ import annotations

from prefect.transactions import Transaction, get_transaction

from tasks.runtime.context import RunRef, store_for


def remember_decision_part(ref: RunRef, stage: str, key: str) -> None:
    """Record, in the current transaction, the decisions part ``stage``/``key``."""
    transaction = get_transaction()
    transaction.set("ref", ref)
    transaction.set("decision_part", (stage, key))


def undo_decision_part(transaction: Transaction) -> None:
    """The rollback hook of every deciding stage: delete the part it remembered."""
    ref = transaction.get("ref")
    stage, key = transaction.get("decision_part")
    store_for(ref.store_uri).delete_part("gate_decisions", ref.run_id, stage, key)
