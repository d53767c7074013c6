"""The protocol's graders, behaviour diff and verdict, pure.

A ``Trajectory`` is what a run stores: the calls as made (the shown tool name, the
arguments, a hash of the observation), the final state and the condition it ran under.
Two graders score it: ``final_state`` checks the state against the task's expectation;
``trace_match`` checks that the task's required tools were called, in version 1 by the
hard-coded canonical names (the planted bug: a rename fails it although nothing the agent
did changed), in version 2 through the condition's view (the fixed rule). Rescoring reads
the stored trajectory again under version 2; nothing is re-run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tasks.gate.stats import paired_bootstrap_ci
from tasks.loops.trace.perturb import view

MARGIN = 0.10
"""The pre-set equivalence margin on Δreward."""
VERDICTS = ("no effect", "grader artifact", "behaviour effect", "inconclusive")
GRADERS = {"final_state": ("1",), "trace_match": ("1", "2")}


@dataclass(frozen=True)
class Step:
    tool: str
    """The shown name the agent called."""
    args: tuple[tuple[str, Any], ...]
    obs_hash: str


@dataclass(frozen=True)
class Trajectory:
    task: str
    condition: str
    steps: tuple[Step, ...]
    final_state: Mapping[str, Any] = field(default_factory=dict)


def canonical_actions(trajectory: Trajectory) -> tuple[tuple[str | None, tuple], ...]:
    """The calls with each shown name mapped back to its canonical tool (None: unknown)."""
    shown = view(trajectory.condition)
    return tuple((shown.canonical(s.tool), s.args) for s in trajectory.steps)


def grade(grader: str, version: str, trajectory: Trajectory, expected_state: Mapping[str, Any],
          required_tools: Sequence[str]) -> float:
    """The reward (0 or 1) of ``trajectory`` under ``grader`` at ``version``."""
    if version not in GRADERS.get(grader, ()):
        raise ValueError(f"no grader {grader} v{version}; known: "
                         + ", ".join(f"{g} v{v}" for g, vs in GRADERS.items() for v in vs))
    if grader == "final_state":
        return float(all(trajectory.final_state.get(k) == v for k, v in expected_state.items()))
    if version == "1":
        called = {s.tool for s in trajectory.steps}
    else:
        called = {tool for tool, _ in canonical_actions(trajectory)}
    return float(all(tool in called for tool in required_tools))


def behaviour_changed(a: Trajectory, b: Trajectory) -> bool:
    """Whether the actions (canonical tools and arguments), the observations or the final
    state differ between two runs of one task. A renamed call is the same action."""
    return (canonical_actions(a) != canonical_actions(b) or [s.obs_hash for s in a.steps] != [s.obs_hash for s in b.steps]
            or dict(a.final_state) != dict(b.final_state))


@dataclass(frozen=True)
class Pair:
    """One task's original and modified run with their rewards under the native grader
    and under the fixed grader (the rescore of the same stored trajectories)."""

    task: str
    original: float
    modified: float
    changed: bool
    rescored_original: float
    rescored_modified: float


@dataclass(frozen=True)
class Verdict:
    delta: float
    ci: tuple[float, float]
    behaviour_changed: float
    """Share of pairs whose behaviour differs."""
    rescore_delta: float
    rescore_ci: tuple[float, float]
    flip_rate: float
    verdict: str


def flip_rate(original: Mapping[str, float], rerun: Mapping[str, float]) -> float:
    """Share of tasks whose outcome differs between two identical runs: the noise floor."""
    tasks = sorted(original)
    return sum(original[t] != rerun[t] for t in tasks) / len(tasks) if tasks else 0.0


def _within(ci: tuple[float, float], margin: float) -> bool:
    return -margin <= ci[0] and ci[1] <= margin


def verdict(pairs: Sequence[Pair], flips: float, rerun_changed: float, margin: float = MARGIN,
            resamples: int = 2000, seed: int = 0) -> Verdict:
    """no effect: the Δreward CI lies inside ±margin. Otherwise grader artifact: no more
    behaviour changed than between identical reruns (``rerun_changed``) and the fixed
    grader's Δ CI lies inside ±margin. Behaviour effect: behaviour changed beyond the
    reruns and |Δ| exceeds the rerun flip rate. Anything else is inconclusive."""
    diffs = [p.modified - p.original for p in pairs]
    rescored = [p.rescored_modified - p.rescored_original for p in pairs]
    ci = paired_bootstrap_ci(diffs, resamples=resamples, seed=seed)
    rescore_ci = paired_bootstrap_ci(rescored, resamples=resamples, seed=seed)
    delta, rescore_delta = sum(diffs) / len(diffs), sum(rescored) / len(rescored)
    changed = sum(p.changed for p in pairs) / len(pairs)
    if _within(ci, margin):
        label = "no effect"
    elif changed <= rerun_changed and _within(rescore_ci, margin):
        label = "grader artifact"
    elif changed > rerun_changed and abs(delta) > flips:
        label = "behaviour effect"
    else:
        label = "inconclusive"
    return Verdict(delta, ci, changed, rescore_delta, rescore_ci, flips, label)


Runs = Mapping[str, Trajectory]
"""task -> the stored trajectory of one (agent, condition)."""


def version_at(grader: str, version: str) -> str:
    """The version of ``grader`` a rescore under grader-set ``version`` applies: its
    latest one not above it (a grader left alone keeps scoring as before)."""
    known = [v for v in GRADERS[grader] if int(v) <= int(version)]
    if not known:
        raise ValueError(f"no grader {grader} at or below v{version}; known: {', '.join(GRADERS[grader])}")
    return known[-1]


Rewards = Mapping[tuple[str, str, str, str], float]
"""(grader-set version, agent, condition, task) -> the stored reward."""


def verdicts(runs: Mapping[tuple[str, str], Runs], grader: str, expected: Mapping[str, Mapping[str, Any]],
             required: Mapping[str, Sequence[str]], margin: float = MARGIN, resamples: int = 2000,
             seed: int = 0, fixed: str | None = None, rewards: Rewards | None = None
             ) -> dict[tuple[str, str], Verdict]:
    """A verdict per (agent, condition other than the original) under ``grader``: its
    native version 1 on the runs, version ``fixed`` (default: its latest) on the same
    stored trajectories (the rescore), the noise floor from each agent's ``original`` vs
    ``rerun`` runs. With ``rewards`` the rewards are read from there (the stored score
    rows), never recomputed; a missing one is a ValueError."""
    fixed = fixed or GRADERS[grader][-1]

    def score(version: str, agent: str, t: Trajectory) -> float:
        if rewards is None:
            return grade(grader, version_at(grader, version), t, expected[t.task], required[t.task])
        key = (version, agent, t.condition, t.task)
        if key not in rewards:
            raise ValueError(f"no {grader} reward under v{version} for {agent} on {t.task} ({t.condition}); "
                             "score and rescore the run first")
        return rewards[key]

    out = {}
    for agent in sorted({a for a, _ in runs}):
        original, rerun = runs[(agent, "original")], runs[(agent, "rerun")]
        flips = flip_rate({t: score("1", agent, r) for t, r in original.items()},
                          {t: score("1", agent, r) for t, r in rerun.items()})
        rerun_changed = sum(behaviour_changed(original[t], rerun[t]) for t in original) / len(original)
        for condition in sorted(c for a, c in runs if a == agent and c != "original"):
            modified = runs[(agent, condition)]
            pairs = [Pair(t, score("1", agent, original[t]), score("1", agent, modified[t]),
                          behaviour_changed(original[t], modified[t]), score(fixed, agent, original[t]),
                          score(fixed, agent, modified[t])) for t in sorted(original)]
            out[(agent, condition)] = verdict(pairs, flips, rerun_changed, margin, resamples, seed)
    return out
