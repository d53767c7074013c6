"""rsi_anything end to end on the real engine, store and sandbox (bin_packing's or1 file,
tiny budgets): each round executes exactly the WM's top pick, recorded gains are the
public means, every gate decision is the pair gate recomputed from the recorded draws,
the pair and parts arms differ only where the rule says, the tables answer in SQL, and a
second call of the run adds nothing."""

import json
from statistics import fmean

import pytest

from flows.rsi_anything import rsi_anything
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.rsi_anything.pair import Batch, WorldModel, clip_gain, pair_gate

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "rsi_candidates", "rsi_executions", "wm_versions", "pair_checks",
          "gate_decisions", "registry")
TINY = {"warmup": 4, "val_batches": 2, "val_children": 3, "min_pairs": 2, "max_calib_error": 0.05}


def config(gate: str, budget: int = 3) -> RunConfig:
    return RunConfig(loop="rsi_anything", suite="bin_packing", budget=budget, seed=0, tracking=False, workers=2,
                     suite_params={"datasets": "or1"}, rsi_anything={**TINY, "gate": gate})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("rsi_anything") / "store")
    return uri, {gate: rsi_anything(config=config(gate), store_uri=uri, run_id=gate) for gate in ("pair", "parts")}


def wm(store, cid: str) -> WorldModel:
    return WorldModel.from_code(store.get_blob(cid).decode())


@pytest.mark.parametrize("run", ["pair", "parts"])
def test_each_round_executes_the_wm_top_pick_and_records_its_public_gain(ran, run):
    uri, _ = ran
    store = open_store(uri)
    public: dict[str, dict[str, float]] = {}
    for s in store.read_rows("scores", run):
        if s.metric == "neg_excess_pct" and s.split == "select":
            public.setdefault(s.candidate_id, {})[s.case_id] = s.value
    assert {len(v) for v in public.values()} == {5}  # or1: 20 instances, every 4th in select
    executions = {(e.phase, e.round, e.cand_id): e for e in store.read_rows("rsi_executions", run)}
    for r in (1, 2, 3):
        rows = store.read_part("rsi_candidates", run, "online", f"r{r:04d}")
        assert len(rows) == 4
        model = wm(store, rows[0].wm_ver)
        preds = [model.predict(c.features) for c in rows]
        assert [c.pred_gain for c in rows] == pytest.approx(preds)
        (chosen,) = [c for c in rows if c.selected]
        assert rows.index(chosen) == preds.index(max(preds))
        e = executions[("online", r, chosen.cand_id)]
        assert e.online_score == pytest.approx(fmean(public[chosen.cand_id].values()))
        assert e.gain == pytest.approx(clip_gain(e.online_score - fmean(public[chosen.parent_id].values()), 5.0))
    online = [e for e in executions.values() if e.phase == "online"]
    assert len(online) == 3 and all(e.test_calls in (0, 5) for e in online)


@pytest.mark.parametrize("run", ["pair", "parts"])
def test_every_gate_decision_is_the_pair_gate_on_the_recorded_draws(ran, run):
    uri, _ = ran
    store = open_store(uri)
    checks = {c.round: c for c in store.read_rows("pair_checks", run)}
    decisions = store.read_rows("gate_decisions", run)
    assert decisions and len(decisions) == len(checks)
    for d in decisions:
        c = checks[d.round]

        def draws(which: str) -> list[Batch] | None:
            if not store.has_part("rsi_candidates", run, "validate", f"r{d.round:04d}-{which}-b0"):
                return None
            out = []
            for b in (0, 1):
                key = f"r{d.round:04d}-{which}-b{b}"
                got = {e.cand_id: e.gain for e in store.read_part("rsi_executions", run, "validate", key)}
                rows = store.read_part("rsi_candidates", run, "validate", key)
                out.append(Batch(tuple(tuple(x.features) for x in rows), tuple(got[x.cand_id] for x in rows)))
            return out

        ev = json.loads(d.evidence_json)
        new_wm = wm(store, ev["new_wm"]) if ev["new_wm"] else None
        accept, _, _, again = pair_gate(wm(store, c.old_wm_ver), new_wm, draws("old"), draws("new"), run)
        assert d.decision == ("accept" if accept else "reject") and c.accepted == accept
        assert again["delta"] == pytest.approx(d.delta) and (c.policy_part, c.wm_part) == (again["policy_part"],
                                                                                            again["wm_part"])
        if run == "pair":
            assert accept == ((c.policy_part or c.wm_part) and d.delta > 0)
        else:
            assert accept == (c.policy_part or c.wm_part)
        assert d.ci_low <= d.delta <= d.ci_high


def test_the_tables_answer_in_sql_and_a_second_call_adds_nothing(ran):
    uri, summaries = ran
    store = open_store(uri)
    status = sql(store, "SELECT run_id, count(*) AS n FROM wm_versions WHERE status <> 'candidate' "
                        "GROUP BY run_id ORDER BY run_id").to_pylist()
    assert status == [{"run_id": "pair", "n": 4}, {"run_id": "parts", "n": 4}]  # round 0's fit, then one check a round
    fit = sql(store, "SELECT train_pairs FROM wm_versions WHERE run_id = 'pair' AND status = 'initial'").to_pylist()
    assert fit == [{"train_pairs": TINY["warmup"]}]  # WM v0 is fitted on the warm-up children
    (v0,) = [w.ver for w in store.read_rows("wm_versions", "pair") if w.status == "initial"]
    assert {c.wm_ver for c in store.read_part("rsi_candidates", "pair", "online", "r0001")} == {v0}
    calls = sql(store, "SELECT sum(test_calls) AS n FROM rsi_executions WHERE run_id = 'pair' AND phase = 'online'")
    assert calls.to_pylist() == [{"n": summaries["pair"]["online_calls"]}]
    best = sql(store, "SELECT holdout_score AS h FROM registry WHERE run_id = 'pair' AND name LIKE '%-best'").to_pylist()
    holdout = [s.value for s in store.read_rows("scores", "pair") if s.split == "holdout" and s.metric == "neg_excess_pct"]
    assert best == [{"h": pytest.approx(fmean(holdout))}] and best[0]["h"] <= 0.0
    pairs = sql(store, "SELECT count(*) AS n FROM registry WHERE run_id = 'parts' AND name LIKE '%-pair'").to_pylist()
    accepted = sum(c.accepted for c in store.read_rows("pair_checks", "parts"))
    assert pairs == [{"n": 1 + accepted}]
    before = {t: len(store.read_rows(t, "pair")) for t in TABLES}
    again = rsi_anything(config=config("pair"), store_uri=uri, run_id="pair")
    assert {t: len(store.read_rows(t, "pair")) for t in TABLES} == before and again == summaries["pair"]
