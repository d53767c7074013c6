"""One ModularRSI round as pure logic over an injected runner (the trusted toolsim
simulation in the findings script, the stage tasks' recorded traces in the flow):
roll the batch under the base harness, analyse, let each finding's module edit the
same base, gate every edit, integrate the accepted ones. The non-modular ablation edits
the whole harness in sequence (as many edits a round as there are modules), each edit
from the one before, under the same gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from schemas.ids import derived_id
from suites.base import Case
from tasks.loops.modular_rsi.contrast import Defect, Finding, diagnose, findings
from tasks.loops.modular_rsi.evolve import ModuleEdit, gate_overfit, gate_run, gate_static, integrate, modify
from tasks.loops.modular_rsi.modules import MODULES
from tasks.proposers.rule_evidence import Trace

Runner = Callable[[Mapping[str, Any], Sequence[Case]], dict[str, Trace]]
"""(harness document, cases) -> case id -> trace."""
Modifier = Callable[[Mapping[str, Any], Finding, Sequence[Trace], frozenset], Optional[ModuleEdit]]
"""(base, finding, its tasks' traces, rejected keys) -> an edit of the finding's module, or None."""
GATE_TASKS = 2


@dataclass(frozen=True)
class Gated:
    edit: ModuleEdit
    static: tuple[bool, str]
    overfit: tuple[bool, str]
    run: tuple[bool, str]
    before: dict[str, float] = field(default_factory=dict)
    """The base's success on the gate's tasks (empty: not run)."""
    after: dict[str, float] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.static[0] and self.overfit[0] and self.run[0]


@dataclass
class Round:
    base: dict[str, Any]
    traces: dict[str, Trace]
    defects: list[Defect] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    gated: list[Gated] = field(default_factory=list)
    harness: dict[str, Any] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)


def pool_of(templates: Sequence[str], k: int, seed: int) -> list[str]:
    """The evolution pool's templates: the first ``k`` in a seeded order (sorted)."""
    return sorted(sorted(set(templates), key=lambda t: derived_id(seed, "pool", t))[:k])


def batch_of(pool_cases: Sequence[Case], round_index: int, size: int, seed: int) -> list[Case]:
    """Round r's batch: the next ``size`` pool tasks in a seeded order, wrapping around."""
    stream = sorted(pool_cases, key=lambda c: derived_id(seed, "stream", c.case_id))
    size = min(size, len(stream))
    start = ((round_index - 1) * size) % len(stream)
    return [stream[(start + i) % len(stream)] for i in range(size)]


def by_task(cases: Sequence[Case], traces: Mapping[str, Trace]) -> dict[str, list[Trace]]:
    """A task is a template: its rollouts are the batch's instances of it."""
    out: dict[str, list[Trace]] = {}
    for case in cases:
        out.setdefault(case.payload["template"], []).append(traces[case.case_id])
    return out


def gate_cases(cases: Sequence[Case], traces: Mapping[str, Trace], tasks: Sequence[str]) -> list[Case]:
    """The gate's two batch tasks: failing rollouts of the finding's tasks first."""
    mine = [c for c in cases if c.payload["template"] in tasks]
    ranked = sorted(mine, key=lambda c: (traces[c.case_id].success, c.case_id))
    return ranked[:GATE_TASKS]


def gate(edit: ModuleEdit, base: Mapping[str, Any], cases: Sequence[Case], traces: Mapping[str, Trace],
         run: Runner, literals: set[str]) -> Gated:
    static, overfit = gate_static(edit, base), gate_overfit(edit, literals)
    if not (static[0] and overfit[0]):
        return Gated(edit, static, overfit, (False, "not run: an earlier check failed"))
    edited = run(edit.document, cases)
    before = {c.case_id: float(traces[c.case_id].success) for c in cases}
    after = {c.case_id: float(edited[c.case_id].success) for c in cases}
    return Gated(edit, static, overfit, gate_run(before, after), before, after)


def analyse(cases: Sequence[Case], traces: Mapping[str, Trace], max_steps: int, min_support: int,
            contrast: bool = True) -> tuple[list[Defect], list[Finding]]:
    """Defects per task and the recurring findings; ``contrast=False`` (an ablation the
    paper lacks) hides the successes, so every task gets the one-sided diagnosis."""
    grouped = by_task(cases, traces)
    if not contrast:
        grouped = {t: [r for r in rs if not r.success] for t, rs in grouped.items()}
    defects = [d for t, rs in sorted(grouped.items()) if (d := diagnose(t, rs, max_steps))]
    return defects, findings(defects, min_support)


def catalogue_modifier(base: Mapping[str, Any], finding: Finding, traces: Sequence[Trace],
                       rejected: frozenset) -> ModuleEdit | None:
    return modify(traces, base, finding.module, rejected)


def module_edits(base: Mapping[str, Any], batch: Sequence[Case], traces: Mapping[str, Trace],
                 found: Sequence[Finding], run: Runner, literals: set[str],
                 rejected: frozenset[str] = frozenset(), modifier: Modifier | None = None) -> list[Gated]:
    """Each finding's module (once, most supported finding first) edits the same base
    from its finding's traces (``modifier``, default the module-scoped rule catalogue);
    every edit gated."""
    routed: dict[str, Finding] = {}
    for finding in found:
        routed.setdefault(finding.module, finding)
    out = []
    for module in [m for m in MODULES if m in routed]:
        tasks = routed[module].support_task_ids
        support = [traces[c.case_id] for c in batch if c.payload["template"] in tasks]
        edit = (modifier or catalogue_modifier)(base, routed[module], support, rejected)
        if edit is not None:
            out.append(gate(edit, base, gate_cases(batch, traces, tasks), traces, run, literals))
    return out


def chained_edits(base: Mapping[str, Any], batch: Sequence[Case], traces: Mapping[str, Trace],
                  found: Sequence[Finding], run: Runner, literals: set[str],
                  rejected: frozenset[str] = frozenset()) -> tuple[list[Gated], dict[str, Any]]:
    """The ablation: up to len(MODULES) whole-harness edits in sequence, no routing,
    each from the last accepted one; (the gated edits, the last accepted harness)."""
    current, seen, out = dict(base), set(rejected), []
    tasks = sorted({t for f in found for t in f.support_task_ids})
    evidence = [traces[c.case_id] for c in batch if c.payload["template"] in tasks]
    for _ in MODULES:
        edit = modify(evidence, current, None, seen)
        if edit is None:
            break
        seen.add(edit.key)
        cases = gate_cases(batch, traces, tasks)
        gated = gate(edit, current, cases, run(current, cases), run, literals)
        out.append(gated)
        if gated.accepted:
            current = edit.document
    return out, current


def modular_round(base: Mapping[str, Any], batch: Sequence[Case], run: Runner, literals: set[str],
                  max_steps: int, min_support: int = 2, rejected: frozenset[str] = frozenset(),
                  contrast: bool = True) -> Round:
    traces = run(base, batch)
    out = Round(dict(base), traces)
    out.defects, out.findings = analyse(batch, traces, max_steps, min_support, contrast)
    out.gated = module_edits(base, batch, traces, out.findings, run, literals, rejected)
    out.harness, out.conflicts = integrate(base, [g.edit for g in out.gated if g.accepted])
    return out


def monolithic_round(base: Mapping[str, Any], batch: Sequence[Case], run: Runner, literals: set[str],
                     max_steps: int, min_support: int = 2, rejected: frozenset[str] = frozenset(),
                     contrast: bool = True) -> Round:
    traces = run(base, batch)
    out = Round(dict(base), traces)
    out.defects, out.findings = analyse(batch, traces, max_steps, min_support, contrast)
    out.gated, out.harness = chained_edits(base, batch, traces, out.findings, run, literals, rejected)
    return out


def rejected_keys(rounds: Sequence[Round]) -> frozenset[str]:
    return frozenset(g.edit.key for r in rounds for g in r.gated if not g.accepted)


def evolve(seed: Mapping[str, Any], batches: Sequence[Sequence[Case]], run: Runner, literals: set[str],
           max_steps: int, modular: bool = True, min_support: int = 2, contrast: bool = True) -> list[Round]:
    """Rounds over the batches; each round's harness is the next round's base."""
    step = modular_round if modular else monolithic_round
    rounds: list[Round] = []
    base = dict(seed)
    for batch in batches:
        rounds.append(step(base, batch, run, literals, max_steps, min_support, rejected_keys(rounds), contrast))
        base = rounds[-1].harness
    return rounds


