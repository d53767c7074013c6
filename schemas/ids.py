"""Deterministic ids: content hashes for things with content, derived hashes for the
rest, so that a retried or resumed stage reproduces exactly the same ids."""

from __future__ import annotations

import hashlib


def content_id(content: str | bytes) -> str:
    """sha256 hex of the content (candidates, blobs)."""
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


def derived_id(*parts: object) -> str:
    """A 24-hex id derived from its parts, e.g. derived_id(run_id, candidate_id, case_id)."""
    joined = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(joined.encode()).hexdigest()[:24]


def seed_for(*parts: object) -> int:
    """A 63-bit seed derived from its parts (per-round and per-node RNG streams)."""
    return int(hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:15], 16)
