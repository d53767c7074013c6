"""Configs of the search-scheduling loops (issue 14): loops that improve how a search
spends its evaluations rather than the program itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.frozen import Config


class DreamRSIConfig(Config):
    """Parameters of `dream_rsi` (Dream-RSI): a scheduling policy (UCB constant, branch
    width, patience) rewritten by TPE in replay of recorded search trees, then run for
    real on the suite with the frozen `mutate` code agent."""

    ucb_c: float = Field(1.0, ge=0.0, le=10.0)
    """The initial policy's UCB exploration constant."""
    width: int = Field(8, ge=1, le=32)
    """The initial policy's branch width (children per expansion batch)."""
    patience: int = Field(3, ge=1, le=64)
    """The initial policy's patience (batches without a new best before it stops)."""
    attempts: int = Field(32, ge=2, le=2000)
    """Most child programs one real round may evaluate (its discovery budget)."""
    rewriter_trials: int = Field(30, ge=1, le=2000)
    """TPE trials of one dream, each a policy rehearsed on every recorded tree."""
    replay_runs: list[str] = []
    """Other runs of the store (evolve, dream_rsi) whose recorded trees join the replay pool."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """The frozen code agent's AST edits per child (the `mutate` proposer)."""


class EvoAllocConfig(Config):
    """Parameters of `evoalloc` (EvoAlloc): a per-candidate Full / Partial / Discard
    allocator (a threshold rule set) inside `mutate` program evolution, revised from
    experience (counterfactual full evaluations of would-be discards included) and
    replaced only when it wins the shadow test."""

    arm: Literal["evoalloc", "fixed", "one_shot"] = "evoalloc"
    """evoalloc: revise and shadow-test; fixed: the initial policy throughout; one_shot:
    one revision at the first trigger, adopted without a shadow test, never revised again."""
    discard_below: float = Field(0.25, ge=0.0, le=1.0)
    """The initial policy: discard a child whose parent's score percentile is below this."""
    full_above: float = Field(1.0, ge=0.0, le=1.0)
    """The initial policy: evaluate Full at once when the parent's percentile is above this
    (1: never at once where a Partial level exists)."""
    promote_at: float = Field(0.0, ge=-1e6, le=1e6)
    """The initial policy: a Partial child goes on to Full when its partial score minus its
    parent's partial score is at least this (0: as good as its parent)."""
    partial_files: list[str] = ["or1"]
    """Instance files (case-id prefixes before '/') of the select split that make the Partial
    level; a suite with no such cases (circle_packing) has Full / Discard only."""
    counterfactual_rate: float = Field(0.25, ge=0.0, le=1.0)
    """Probability that a would-be discard is full-evaluated anyway (counterfactual exploration)."""
    revise_every: int = Field(4, ge=1, le=1000)
    """Full results since the last revision that trigger a new policy proposal."""
    shadow_window: int = Field(4, ge=1, le=1000)
    """Candidates on which a proposed policy shadows the active one before the acceptance rule."""
    parents_top: int = Field(4, ge=1, le=64)
    """The generator's parent pool: the best `parents_top` full-evaluated programs."""
    children_per_round: int = Field(4, ge=1, le=64)
    """Children proposed per round (one sample, allocate, distill, gate per round)."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """The generator's AST edits per child (the `mutate` proposer)."""


class ResearchWorldModelsConfig(Config):
    """Parameters of `research_world_models` (Research World Models): an archive of real
    lasso experiments (each intervention a knob setting of the seed solver, each dataset
    of the train and select splits an environment), then predictors choose `choose` of
    `proposals` per selection, the target's near-duplicate group never in their context."""

    interventions: int = Field(24, ge=4, le=600)
    """Knob settings executed for the archive (distinct, seeded, none the seed's)."""
    proposals: int = Field(16, ge=2, le=600)
    """Proposals per selection (the paper: 16)."""
    choose: int = Field(3, ge=1, le=64)
    """Proposals a predictor picks per selection (the paper: 3)."""
    knn_k: int = Field(3, ge=1, le=64)
    ridge_lambda: float = Field(1.0, gt=0.0, le=1e6)


class CodeMidasConfig(Config):
    """Parameters of `codemidas` (CodeMidas): the environment-construction loop. Each round
    takes the next `per_round` candidate functions of the installed-source pool, builds
    each one's environment (hollowed stub, spec, fuzz tests derived from the original),
    runs gate 1 (reliability) and gate 2 (difficulty) on its select tests and adds the
    accepted ones to the registered environment set."""

    per_round: int = Field(4, ge=1, le=64)
    """Candidate functions built per round."""
    modules: tuple[str, ...] = ()
    """The installed modules the pool takes (`suites.codemidas.ship.SOURCES`); empty: all."""
    n_tests: int = Field(24, ge=8, le=400)
    """Fuzz tests derived per function; i % 4 == 3 are held out (never read by a gate)."""
    site_mutants: int = Field(12, ge=0, le=64)
    """One-site mutants of the reference per environment (weak solvers, with the stub,
    the two trivial mutants and the retrieval solver)."""
    drop_leaky: bool = False
    """Drop an environment whose retrieval solver (it imports the installed original)
    passes. Off by default: every environment cut from installed code has that leak, and
    the loop records it (`leak_found`) rather than dropping every task."""
    llm_inputs: int = Field(6, ge=1, le=64)
    """`proposer: llm`: test inputs the endpoint writes per function (added to the fuzz ones)."""
