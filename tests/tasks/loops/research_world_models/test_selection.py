import math

import pytest

from tasks.loops.research_world_models.selection import (
    Record,
    context_for,
    ndcg_at_k,
    predict_knn,
    predict_prior,
    predict_ridge,
    regret_at_k,
    top_k,
)

REALIZED = [0.1, 0.5, 0.3, 0.0]
PREDICTED = [0.4, 0.1, 0.3, 0.2]


def _record(i, env, group, x, gain):
    return Record(f"r{i}", env, group, tuple(x), gain)


def test_regret_is_the_best_gain_left_unchosen():
    assert top_k(PREDICTED, 2) == [0, 2]
    assert regret_at_k(PREDICTED, REALIZED, k=2) == pytest.approx(0.5 - 0.3)
    assert regret_at_k(REALIZED, REALIZED, k=1) == 0.0
    assert regret_at_k([0.0] * 4, REALIZED, k=1) == pytest.approx(0.4)  # ties: the first proposal


def test_ndcg_by_hand():
    # chosen 0, 2: 0.1 / log2(2) + 0.3 / log2(3); ideal 1, 2: 0.5 + 0.3 / log2(3)
    dcg = 0.1 + 0.3 / math.log2(3)
    ideal = 0.5 + 0.3 / math.log2(3)
    assert ndcg_at_k(PREDICTED, REALIZED, k=2) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(REALIZED, REALIZED, k=3) == pytest.approx(1.0)
    assert ndcg_at_k(PREDICTED, [0.2] * 4, k=3) == 1.0
    # relevance is gain minus the smallest gain: shifting every gain changes nothing
    assert ndcg_at_k(PREDICTED, [g - 7 for g in REALIZED], k=2) == pytest.approx(dcg / ideal)


def test_knn_is_the_median_of_the_nearest():
    context = [_record(0, "a", "g0", [0.0], 1.0), _record(1, "a", "g1", [1.0], 3.0),
               _record(2, "a", "g2", [10.0], 100.0)]
    assert predict_knn(context, [0.4], k=2) == 2.0
    assert predict_knn(context, [9.0], k=1) == 100.0
    assert predict_knn([], [0.0]) == 0.0


def test_ridge_by_hand():
    context = [_record(i, "a", f"g{i}", [float(i)], 1.0 + 2.0 * i) for i in range(3)]
    assert predict_ridge(context, [3.0], lam=0.0) == pytest.approx(7.0)
    # centred x = -1, 0, 1: slope 4 / (2 + 2) = 1 about (1, 3): 3 + 1 * 2
    assert predict_ridge(context, [3.0], lam=2.0) == pytest.approx(5.0)
    assert predict_prior(context, [3.0]) == 0.0


def test_context_holds_out_the_near_duplicate_group_and_cross_env_the_environment():
    archive = [_record(0, "a", "g0", [0], 1.0), _record(1, "a", "g1", [0], 1.0), _record(2, "b", "g0", [0], 1.0),
               _record(3, "b", "g2", [0], 1.0)]
    assert [r.record_id for r in context_for(archive, "a", "g0", cross_env=False)] == ["r1"]
    assert [r.record_id for r in context_for(archive, "a", "g0", cross_env=True)] == ["r3"]
    assert [r.record_id for r in context_for(archive, "b", "g1", cross_env=False)] == ["r2", "r3"]


def test_selection_metrics_pairs_the_draws_across_predictors():
    from tasks.loops.research_world_models.selection import selection_metrics

    # gain = feature: the ridge fit is exact, so it always picks the best; the prior picks the first 3 drawn
    archive = [_record(i, "a", f"g{i}", [float(i)], float(i)) for i in range(6)]
    metrics = selection_metrics(archive, "a", cross_env=False, draws=4, n=4, k=1, seed=0)
    assert set(metrics) == {"prior", "knn", "ridge"}
    assert metrics["ridge"][0] == pytest.approx([0.0] * 4)
    assert all(len(metrics[p][0]) == 4 for p in metrics)
    assert all(r >= 0 for r in metrics["prior"][0])
