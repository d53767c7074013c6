"""Round 0 of every harness loop: publish the suite's seed harness (or, with
`start_from="champion"`, the store's champion) as the run's first candidate, once (a retry or a resume finds the part and returns the same id)."""

from __future__ import annotations

from schemas.rows import CandidateRow
from tasks.runtime.context import RunRef, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.start import round0_program


def publish_seed(ref: RunRef, stage: str, key: str, summary: str) -> str:
    """The round-0 candidate's id (the sha256 of its program), published as
    the candidates part ``stage``/``key`` if it is not there yet."""
    return once(ref, "candidates", stage, key, lambda: [seed_row(ref, summary)])[0].candidate_id


def seed_row(ref: RunRef, summary: str) -> CandidateRow:
    store, suite = store_for(ref.store_uri), run_suite(ref)
    program, summary = round0_program(ref, suite.seed_program(), summary)
    blob = store.put_blob(program)
    return CandidateRow(run_id=ref.run_id, candidate_id=blob, round=0, parent_ids=[], operator="seed",
                        proposer="seed", artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob),
                        island=-1, summary=summary)
