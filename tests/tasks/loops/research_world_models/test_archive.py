import math

import pytest

from suites.lasso import Lasso
from tasks.loops.research_world_models.archive import KNOBS, apply_knobs, features, group_of, interventions, records
from tasks.loops.research_world_models.selection import Record, predict_prior, selection_round

SEED_KNOBS = {name: values[0] for name, values in KNOBS.items()}


def test_apply_knobs_edits_only_the_named_lines():
    source = apply_knobs(Lasso().seed_program(), {"USE_GRAM": 1, "TOL_SCALE": 0.5})
    assert "\nUSE_GRAM = 1  #" in source and "\nTOL_SCALE = 0.5  #" in source and "\nSCREEN = 0  #" in source
    with pytest.raises(ValueError, match="no knob NOPE"):
        apply_knobs(Lasso().seed_program(), {"NOPE": 1})


def test_interventions_are_distinct_seeded_and_never_the_seed():
    drawn = interventions(20, seed=3)
    assert drawn == interventions(20, seed=3) and SEED_KNOBS not in drawn
    assert len({tuple(d.values()) for d in drawn}) == 20


def test_groups_and_features():
    assert group_of(SEED_KNOBS) == "constants-only"
    assert group_of(SEED_KNOBS | {"USE_GRAM": 1, "PATH_STEPS": 4, "GAP_EVERY": 20}) == "USE_GRAM+PATH_STEPS"
    assert features(SEED_KNOBS | {"ACTIVE_SWEEPS": 2}) == pytest.approx((0.0, 0.0, 0.0, 0.0, math.log(3), 0.0, 1.0))


def test_records_average_the_gain_per_dataset():
    knobs = [SEED_KNOBS | {"SCREEN": 1}]
    scores = [{"wine/a0.3": 0.5, "wine/a0.1": 0.1, "diabetes/a0.3": -1.0}]
    seed = {"wine/a0.3": 0.3, "wine/a0.1": 0.1, "diabetes/a0.3": -0.8}
    out = records(knobs, scores, seed)
    assert [(r.record_id, r.env_id, r.group) for r in out] == [("i000/diabetes", "diabetes", "SCREEN"),
                                                               ("i000/wine", "wine", "SCREEN")]
    assert [r.gain for r in out] == pytest.approx([-0.2, 0.1])


def test_a_selection_round_never_reads_its_own_group():
    archive = [Record("a", "e", "g", (0.0,), 5.0), Record("b", "e", "h", (0.0,), -5.0)]
    seen = []

    def spy(context, x):
        seen.append(sorted(r.record_id for r in context))
        return predict_prior(context, x)

    regret, ndcg, predicted = selection_round(archive, archive, spy, cross_env=False, k=1)
    assert seen == [["b"], ["a"]] and predicted == [0.0, 0.0]
    assert (regret, ndcg) == (0.0, 1.0)  # ties keep order: "a" (gain 5) is chosen
