"""Config and tables of the `gai` protocol (GAI, Generalized Agent Iteration, issue 15):
the loop manifest of a store. Every run is placed on the paper's two switches (is the
improver inside the agent; is the progress standard anchored outside it) from what it
declares (its loop spec, its config) and records (its anchored scorer version, the
scorer versions its gate weighed, the splits of its cases, which cases selection read).
Imports nothing of ours but the row and config bases."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from schemas.frozen import Config
from schemas.rows import Row

COMPONENTS = ("policy", "evaluator", "improver", "meta_evaluator", "evaluation_basis")
"""The paper's five modifiable components of an agent."""
ANCHORS = ("anchored", "goal-drifting", "self-referential")
"""Switch 2: the progress standard is fixed outside the agent; it changed within the run;
the agent may edit it (its evaluator or evaluation basis is among its mutable parts)."""


class GAIConfig(Config):
    """Parameters of `gai`: which runs of the store the manifest covers. `--budget` is
    not a size here: every selected run is audited once."""

    loops: tuple[str, ...] = ()
    """Audit only runs of these loops (empty: every loop but `gai` itself)."""
    include_failed: bool = True
    """Whether failed and interrupted runs are audited too (what they recorded still counts)."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Bootstrap resamples of the CI of a flow's mean internal − external gap (its noise floor)."""


class GAIComponentRow(Row):
    """One component of an audited flow (the spec's ``components``): what it is in the
    flow, whether the flow may change it and by what. Written by sample; read by score
    and analysts. Key: (run_id, flow_id, component)."""

    run_id: str
    flow_id: str
    """The audited run's id."""
    loop: str
    component: str
    what: str
    mutable: bool
    mutated_by: Optional[str]


class GAIVersionRow(Row):
    """One champion version of an audited flow (the spec's ``versions``): the components
    its diff changed, its internal (select) and external (holdout) score and the label of
    its step. Written by distill; read by the report and analysts. Key: (run_id, flow_id, ver)."""

    run_id: str
    flow_id: str
    ver: int
    candidate_id: str
    changed_components: list[str]
    internal_score: Optional[float]
    external_score: Optional[float]
    gap: Optional[float]
    """internal − external."""
    label: str
    """"seed", "progress" (both scores up), "possible standard drift" (a gain seen only
    internally), "external only" or "no gain"."""


class GAIClassificationRow(Row):
    """An audited flow's place on the two switches (the spec's ``classification``) with
    the records it was decided from. Written by register; read by `ratchet audit`, the
    report and analysts. Key: (run_id, flow_id)."""

    run_id: str
    flow_id: str
    loop: str
    suite: str
    status: str
    improver_in_agent: bool
    system: str
    """"GPI" (a fixed updater) or "RSI" (the improver is itself improved)."""
    anchor: str
    anchored_version: Optional[str]
    """The scorer version the run anchored at its start (None: a run that predates it)."""
    gate_versions: int
    """Distinct scorer versions its gate decisions weighed."""
    off_anchor_gates: int
    """Gate decisions that weighed a scorer version other than the anchored one."""
    scorer_versions: int
    """Distinct scorer versions of its score rows (`ratchet rescore` rows included: analysis)."""
    split_edits: int
    """Cases recorded under more than one split within the run (its split was touched)."""
    versions: int
    mean_gap: Optional[float]
    heldout_reads: int
    """Selection evidence that named a holdout/test case, plus holdout/test executions of
    never-registered candidates (selecting loops only)."""
    flagged: bool
    evidence_json: str
