import random

import numpy as np
import pytest

from schemas.configs import EvolveConfig
from suites.circle_packing import RUNNER_SOURCE, SEED_PROGRAM, CirclePacking
from suites.executors.subprocess import SubprocessExecutor
from tasks.proposers import circle_grammar as cg
from tasks.proposers import circle_program as cp
from tasks.proposers import make_proposer
from tasks.proposers.base import ParentInfo


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<candidate>", "exec"), namespace)
    return namespace


def _score(centers, radii, n: int, tolerance: float = 1e-9):
    suite = CirclePacking(n=n, holdout_n=n, tolerance=tolerance)
    return suite.score(suite.cases()[0], {"centers": np.asarray(centers).tolist(), "radii": np.asarray(radii).tolist()})


POLISHED = {**cp.SEED_STRUCTURE, "family": "rows", "counts": [5, 5, 6, 5, 5], "sizes": [0.0] * 5,
            "twists": [0.0, 0.5, 0.0, 0.5, 0.0], "margin": 0.02, "jitter": 0.01, "seed": 3, "polish": "slsqp",
            "iterations": 200, "hops": 1}


def test_the_seed_structure_renders_the_seeds_packing_for_any_n_and_round_trips():
    source = cp.render(cp.SEED_STRUCTURE)
    assert cp.parse(source) == cp.normalised(cp.SEED_STRUCTURE)
    assert cp.parse(SEED_PROGRAM) is None and cp.structure_of(SEED_PROGRAM) == cp.normalised(cp.SEED_STRUCTURE)
    assert cp.parse(source.replace("'hops': 0", "'hops': 99")) is None  # render writes 16
    construct = _load(source)["construct_packing"]
    for n in (26, 32, 1):
        centers, radii = construct(n)
        assert np.shape(centers) == (n, 2) and np.shape(radii) == (n,)
        assert _score(centers, radii, n).valid
    seed_sum = float(np.sum(_load(SEED_PROGRAM)["construct_packing"](26)[1]))
    assert float(np.sum(construct(26)[1])) == pytest.approx(seed_sum, abs=1e-5)  # 2.2593, shaved 1e-9 not 1e-7


def test_layers_fill_in_order_cut_at_n_and_add_one_layer_for_the_rest():
    layer_counts = _load(cp.render(cp.SEED_STRUCTURE))["layer_counts"]
    assert layer_counts([1, 7, 14, 4], 26) == [1, 7, 14, 4]
    assert layer_counts([1, 7, 14, 4], 32) == [1, 7, 14, 4, 6]
    assert layer_counts([1, 7, 14, 4], 10) == [1, 7, 2]


def test_lp_radii_make_any_centres_strictly_feasible():
    optimal_radii = _load(cp.render(cp.SEED_STRUCTURE))["optimal_radii"]
    centers = np.array([[0.3, 0.5], [0.5, 0.5], [0.5, 0.5 + 1e-6]])  # two nearly coincide
    radii = optimal_radii(centers)
    assert _score(centers, radii, 3, tolerance=0.0).valid
    # hand LP: r0 + r1 <= 0.2, r0 + r2 <= ~0.2, r1 + r2 <= 1e-6: r0 = 0.2 - t, r1 = r2 = t, t = 5e-7
    assert radii.sum() == pytest.approx(0.2 + 5e-7, abs=1e-9)


def test_a_polished_structure_beats_the_seed_validly_and_deterministically():
    construct = _load(cp.render(POLISHED))["construct_packing"]
    centers, radii = construct(26)
    assert _score(centers, radii, 26, tolerance=0.0).valid
    assert radii.sum() > 2.5  # the seed's rings: 2.2593
    again = construct(26)
    assert np.array_equal(again[0], centers) and np.array_equal(again[1], radii)


def test_normalised_clips_constants_and_aligns_layers():
    s = cp.normalised({**cp.SEED_STRUCTURE, "counts": [3, 0, 4], "sizes": [5.0], "twists": [0.1, 0.2, 0.3, 0.4],
                       "hops": 99, "iterations": 3, "polish": "magic", "jitter": 0.123456})
    assert s["counts"] == [3, 1, 4] and s["sizes"] == [0.75, 0.75, 0.75] and s["twists"] == [0.1, 0.2, 0.3]
    assert (s["hops"], s["iterations"], s["polish"], s["jitter"]) == (16, 10, "none", 0.1)


def test_default_layers_and_edits_keep_the_number_of_circles():
    assert cg.default_layers("rings", 26)["counts"] == [1, 6, 12, 7]
    assert cg.default_layers("rows", 26)["counts"] == [6, 5, 5, 5, 5]
    rng = random.Random(5)
    a, b = cp.normalised(cp.SEED_STRUCTURE), cp.normalised({**POLISHED, "counts": [4, 6, 6, 5, 5]})
    for _ in range(200):
        for operator, edit in cg.MUTATIONS.items():
            child = edit(a, rng)
            assert cp.layer_total(child) == 26 and child == cp.normalised(child), operator
        crossed = cg.crossover(b, a, rng)
        assert cp.layer_total(crossed) == 26
        assert all(crossed[f] == b[f] for part in cg.PARTS.values() for f in part if f not in cp.LAYER_FIELDS
                   and f != "family") or crossed["family"] == b["family"]


def test_crossover_takes_one_part_of_the_other_parent_or_a_one_point_cut_of_its_layers():
    rng = random.Random(0)
    a = cp.normalised({**POLISHED, "family": "rings", "counts": [1, 8, 17], "sizes": [0.0, 0.2, 0.4],
                       "twists": [0.0, 0.3, 0.6], "hops": 3})
    b = cp.normalised({**POLISHED, "family": "rings", "counts": [2, 9, 15], "sizes": [0.1, 0.25, 0.45],
                       "twists": [0.5, 0.5, 0.5], "polish": "penalty", "seed": 9})
    seen = set()
    for _ in range(60):
        child = cg.crossover(a, b, rng)
        parts = {name for name, fields in cg.PARTS.items() if any(child[f] != a[f] for f in fields)}
        assert len(parts) <= 1
        if child["counts"] in ([1, 9, 16], [1, 8, 17]) and child["sizes"][0] == 0.0 and child["sizes"][-1] == 0.45:
            seen.add("cut")  # A's first layer(s), B's rest, the last cut back to 26
        seen |= parts
    assert {"cut", "placement", "polish"} <= seen


def test_proposer_children_of_the_seed_are_rendered_structures_and_deterministic_per_seed():
    proposer = make_proposer("grammar", EvolveConfig(crossover_rate=0.5))
    parents = [ParentInfo("a" * 64, SEED_PROGRAM, 2.26), ParentInfo("b" * 64, cp.render(POLISHED), 2.6)]

    def children(seed):
        rng = random.Random(seed)
        return [proposer.propose(parents, rng) for _ in range(40)]

    first = children(1)
    assert [c.source for c in first] == [c.source for c in children(1)]
    for child in first:
        assert cp.parse(child.source) is not None and child.source not in (p.source for p in parents)
        assert child.proposer == "grammar" and child.operator in (*cg.OPERATORS, "circle_crossover")
        assert len(child.parent_ids) == (2 if child.operator == "circle_crossover" else 1)
    assert {c.operator for c in first} == {*cg.OPERATORS, "circle_crossover"}


def test_rendered_programs_run_in_the_sandbox_and_the_suite_scores_them():
    suite = CirclePacking()
    cases = [c for c in suite.cases() if c.split == "train"]
    (result,) = SubprocessExecutor().run(cp.render(POLISHED), RUNNER_SOURCE, suite.entrypoint, cases)
    verdict = suite.score(cases[0], result.output)
    assert result.status == "ok" and verdict.valid and verdict.metrics["sum_radii"] > 2.5


def test_a_structure_without_polish_always_gains_one():
    rng = random.Random(0)
    seed = cp.normalised(cp.SEED_STRUCTURE)
    assert {cg.repolish(seed, rng)["polish"] for _ in range(20)} == {"slsqp", "penalty"}


def test_a_polish_that_diverges_keeps_the_layout_in_the_sandbox():
    # the seed's rings with 100 SLSQP iterations: at n=32, under the sandbox's
    # single-threaded BLAS, SLSQP sent every centre to the corners (LP radii 32 x 1e-12)
    structure = {**cp.SEED_STRUCTURE, "polish": "slsqp", "iterations": 100}
    unpolished = _load(cp.render(cp.SEED_STRUCTURE))["construct_packing"]
    layout_sum = float(np.sum(unpolished(32)[1]))
    suite = CirclePacking()
    cases = [c for c in suite.cases() if c.split == "holdout" and c.payload["n"] == 32]
    (result,) = SubprocessExecutor().run(cp.render(structure), RUNNER_SOURCE, suite.entrypoint, cases)
    verdict = suite.score(cases[0], result.output)
    assert result.status == "ok" and verdict.valid
    assert verdict.metrics["sum_radii"] >= layout_sum - 1e-9 and layout_sum > 2.0
