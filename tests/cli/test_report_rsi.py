"""rsi_anything's report: the series read back in SQL from real Parquet parts join each
executed child's prediction to its actual gain (unpicked children left out) and list the
pair checks by round; the figure draws and the caption counts them."""

from datetime import datetime, timezone

from cli.report_rsi import rsi_build, rsi_caption, rsi_figure
from schemas.rows import RegistryRow
from schemas.rsi_anything import PairCheckRow, RSICandidateRow, RSIExecutionRow
from storage.catalog import connect
from storage.store import open_store


def candidate(r, cand, pred, selected):
    return RSICandidateRow(run_id="x", round=r, phase="online", batch=-1, seed=0, cand_id=cand, parent_id="p",
                           operator="constant", policy_ver="pol", wm_ver="wm1", features=[0.0] * 8, pred_gain=pred,
                           selected=selected)


def test_rsi_series_from_sql(tmp_path):
    store = open_store(str(tmp_path / "store"))
    store.write_part("rsi_candidates", "x", "online", "r0001", [candidate(1, "a", 0.5, True), candidate(1, "b", 0.9, False)])
    store.write_part("rsi_executions", "x", "online", "r0001", [RSIExecutionRow(
        run_id="x", round=1, phase="online", cand_id="a", parent_id="p", online_score=-5.0, parent_score=-5.2,
        gain=0.2, hidden_score=None, test_calls=21)])
    store.write_part("pair_checks", "x", "gate", "r0001", [PairCheckRow(
        run_id="x", round=1, policy_ver="pol2", wm_ver="wm1", old_policy_ver="pol", old_wm_ver="wm1",
        policy_part=True, wm_part=False, metric_new=0.1, metric_old=-0.3, accepted=True, decision_id="d")])
    store.write_part("registry", "x", "register", "best", [RegistryRow(
        run_id="x", name="bin_packing/rsi_anything-best", version=1, candidate_id="a", stage="stable",
        alias="champion", decision_id="", select_score=-5.0, holdout_score=-6.0, event_at=datetime.now(timezone.utc))])
    con = connect(store)
    try:
        series, empty = rsi_build(con, "x")
    finally:
        con.close()
    assert empty is None
    assert series.pairs == [{"round": 1, "phase": "online", "wm_ver": "wm1", "pred_gain": 0.5, "gain": 0.2}]
    assert [(c["round"], c["accepted"], c["metric_new"]) for c in series.checks] == [(1, True, 0.1)]
    assert series.best == {"select_score": -5.0, "holdout_score": -6.0}
    assert rsi_figure(series).axes and "1 pair checks, 1 accepted" in rsi_caption(series)
