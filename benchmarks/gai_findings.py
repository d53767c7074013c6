"""GAI findings: does the manifest tell improving the policy from rewriting the standard?

The spec's offline instance on circle_packing: one mutation-operator evolution of a
packing (n circles in the unit square; grow or move one circle; the gate accepts a child
whose internal score beats its parent's) in three variants, on the same seeds:

- (a) anchored: the internal scorer is the fixed exact-feasibility scorer (tolerance 1e-9,
  `suites.circle_packing.check_packing`);
- (b) drifting: the improver may also loosen the overlap tolerance of the internal scorer
  (its declared components say the scorer is fixed; its gate records say otherwise);
- (c) self-referential: the improver also edits its own mutation schedule (step size) and
  declares the scorer among what it changes.

Each accepted child is a version with an internal score (sum of radii if valid under the
internal tolerance) and an external, anchored one (the same under 1e-9; invalid = 0). The
manifest's own logic (`tasks.loops.gai.manifest`) classifies each variant from its
declared components and its gate's recorded scorer versions, and labels every version.
Printed: the axis table with each variant's final internal − external gap (95% bootstrap
CI over seeds), the paired differences against (a) on the same seeds, and the manifest of
this project's loops (a count of each class: from the loops' specs and clean records, or
from the runs of a real store with `--store`). The paper has no experiments; a claim that
does not hold on this run is printed as not reproduced.

    .venv/bin/python benchmarks/gai_findings.py            # 10 seeds x 400 steps, n = 10
    .venv/bin/python benchmarks/gai_findings.py --quick    # 3 seeds x 120 steps
    .venv/bin/python benchmarks/gai_findings.py --store .ratchet   # the manifest of a real store
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.loops import LOOP_SPECS  # noqa: E402
from suites.circle_packing import check_packing  # noqa: E402
from tasks.gate.stats import paired_bootstrap_ci  # noqa: E402
from tasks.loops.gai.manifest import (  # noqa: E402
    RunFacts,
    Version,
    class_counts,
    classification_row,
    components,
    version_rows,
)

EXACT = 1e-9
VARIANTS = ("anchored", "drifting", "self-referential")


def declared_parts(variant: str) -> list[dict]:
    """The components each variant declares: an evolve run on circle_packing, whose
    self-referential variant also lists its schedule (improver) and scorer as mutable."""
    parts = components("evolve", "circle_packing", {"proposer": "mutate"})
    if variant != "self-referential":
        return parts
    changed = {"improver": "itself (step-size schedule)", "evaluator": "the improver (overlap tolerance)"}
    return [{**p, "mutable": True, "mutated_by": changed[p["component"]]} if p["component"] in changed else p
            for p in parts]


def score(centers: np.ndarray, radii: np.ndarray, tol: float) -> float:
    return float(radii.sum()) if check_packing(centers, radii, tol) is None else 0.0


def evolve_variant(variant: str, seed: int, n: int = 10, steps: int = 400) -> tuple[list[Version], list[str]]:
    """The accepted versions (internal, external score) and the scorer version (the
    internal tolerance) each gate decision weighed."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    grid = np.array([((i % side) + 0.5, (i // side) + 0.5) for i in range(n)]) / side
    centers, radii = np.clip(grid + rng.normal(0, 0.01, grid.shape), 0.1, 0.9), np.full(n, 0.02)
    tol, step = EXACT, 0.02
    versions, gates = [Version(0, "seed", score(centers, radii, tol), score(centers, radii, EXACT))], []
    for _ in range(steps):
        c, r, t = centers.copy(), radii.copy(), tol
        i = rng.integers(n)
        if rng.random() < 0.5:
            r[i] += step * rng.random()
        else:
            c[i] = np.clip(c[i] + rng.normal(0, step, 2), 0.0, 1.0)
        if variant != "anchored" and rng.random() < 0.2:
            t = min(tol * 4 if tol > EXACT else 1e-4, 0.05)  # loosen the internal scorer
        internal, gates = score(c, r, t), gates + [f"tol={t:g}"]
        if internal > versions[-1].internal_score:
            centers, radii, tol = c, r, t
            versions.append(Version(len(versions), f"v{len(versions)}", internal, score(c, r, EXACT)))
            step = step * 1.2 if variant == "self-referential" else step
        elif variant == "self-referential":
            step = max(step / 1.2, 1e-3)
    return versions, gates


def run_variant(variant: str, seed: int, n: int, steps: int):
    versions, gates = evolve_variant(variant, seed, n, steps)
    facts = RunFacts(flow_id=f"{variant}-{seed}", loop="evolve", suite="circle_packing", status="finished",
                     config={}, anchored_version=f"tol={EXACT:g}", gate_versions=tuple(gates),
                     versions=tuple(versions))
    parts = declared_parts(variant)
    rows = version_rows("gai-findings", facts, parts)
    return classification_row("gai-findings", facts, parts, rows), rows


def measure(seeds: int, n: int, steps: int) -> dict:
    """Per variant: its classes, final gaps per seed (same seeds), drift labels."""
    out = {}
    for variant in VARIANTS:
        classes, gaps, internal, external, drift = set(), [], [], [], 0
        for seed in range(seeds):
            row, versions = run_variant(variant, seed, n, steps)
            classes.add(f"{row.system}/{row.anchor}")
            last = versions[-1]
            gaps.append(last.gap)
            internal.append(last.internal_score)
            external.append(last.external_score)
            drift += sum(v.label == "possible standard drift" for v in versions)
        out[variant] = {"classes": sorted(classes), "gaps": gaps, "internal": internal, "external": external,
                        "drift_labels": drift, "gap_ci": paired_bootstrap_ci(gaps)}
    return out


def project_manifest(store: str | None) -> dict[str, int]:
    """The count of each class over this project's loops (their specs, clean records), or
    over the runs of ``store``."""
    if store:
        from tasks.loops.gai.facts import store_facts

        rows = [classification_row("gai-findings", f, components(f.loop, f.suite, f.config), [])
                for f in store_facts(store) if f.loop in LOOP_SPECS and f.loop != "gai"]
    else:
        rows = [classification_row("gai-findings", RunFacts(loop, loop, spec.default_suite, "finished", {},
                                                            "v", ("v",)),
                                   components(loop, spec.default_suite, {}), [])
                for loop, spec in LOOP_SPECS.items() if loop != "gai"]
    return class_counts(rows)


def claims(found: dict) -> list[tuple[str, bool]]:
    a, b, c = (found[v] for v in VARIANTS)
    return [
        ("the audit places (a) GPI/anchored, (b) GPI/goal-drifting, (c) RSI/self-referential",
         (a["classes"], b["classes"], c["classes"]) == (["GPI/anchored"], ["GPI/goal-drifting"],
                                                        ["RSI/self-referential"])),
        ("anchored: no internal − external gap (CI holds 0)", a["gap_ci"][0] <= 0.0 <= a["gap_ci"][1]),
        ("drifting: a gain seen only internally (gap CI above 0)", b["gap_ci"][0] > 0.0),
        ("self-referential: a gain seen only internally (gap CI above 0)", c["gap_ci"][0] > 0.0),
        ("drifting versions are labelled possible standard drift, anchored ones never",
         b["drift_labels"] > 0 and a["drift_labels"] == 0),
    ]


def report(found: dict, counts: dict[str, int], source: str) -> str:
    lines = ["variant            class                   final internal  final external  gap [95% CI]"
             "                drift labels"]
    for variant in VARIANTS:
        f = found[variant]
        gap = float(np.mean(f["gaps"]))
        lines.append(f"{variant:<18} {','.join(f['classes']):<23} {np.mean(f['internal']):>14.4f}  "
                     f"{np.mean(f['external']):>14.4f}  {gap:+.4f} [{f['gap_ci'][0]:+.4f}, {f['gap_ci'][1]:+.4f}]"
                     f"  {f['drift_labels']:>8}")
    lines.append("")
    lines.append("paired on the same seeds, final gap minus (a)'s:")
    for variant in VARIANTS[1:]:
        diffs = [x - y for x, y in zip(found[variant]["gaps"], found["anchored"]["gaps"])]
        lo, hi = paired_bootstrap_ci(diffs)
        lines.append(f"  {variant} − anchored: {np.mean(diffs):+.4f} [{lo:+.4f}, {hi:+.4f}] over {len(diffs)} seeds")
    lines.append("")
    lines.append(f"manifest of this project's loops ({source}): "
                 + ", ".join(f"{k} {v}" for k, v in counts.items()))
    lines.append("")
    for text, holds in claims(found):
        lines.append(f"[{'reproduced' if holds else 'not reproduced'}] {text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 seeds x 120 steps (smoke)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--n", type=int, default=10, help="circles per packing")
    parser.add_argument("--store", default=None, help="classify the runs of this store instead of the loop specs")
    args = parser.parse_args(argv)
    seeds, steps = (3, 120) if args.quick else (args.seeds, args.steps)
    found = measure(seeds, args.n, steps)
    source = f"runs of {args.store}" if args.store else "loop specs, clean records"
    print(report(found, project_manifest(args.store), source))


if __name__ == "__main__":
    main()
