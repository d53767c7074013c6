"""better_turns end to end on the real engine, store and toolsim: every checkpoint scored
once on every held-out turn and conversation, the gate's SFT − base equal to what SQL
computes from the rows, and a second call of the same run adds nothing."""

import pytest

from cli.report import write_report
from flows.better_turns import better_turns
from schemas.configs import RunConfig
from schemas.ids import derived_id
from schemas.protocols import TOOLSIM_TEMPLATES as TEMPLATES
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]

TABLES = ("candidates", "steps", "train_steps", "decisions", "closed_loop", "gate_decisions")


def config(**overrides) -> RunConfig:
    base = dict(loop="better_turns", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                suite_params={"instances_per_template": 2})
    return RunConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("bt") / "store")
    return store_uri, better_turns(config=config(), store_uri=store_uri, run_id="bt-a")


def counts(store_uri: str) -> dict[str, int]:
    store = open_store(store_uri)
    return {table: len(store.read_rows(table)) for table in TABLES}


def test_every_checkpoint_scores_every_held_out_turn_and_conversation(ran):
    store_uri, summary = ran
    store = open_store(store_uri)
    # 8 templates x 2 instances: instance 0 is train, instance 1 select (held out)
    assert counts(store_uri)["candidates"] == 4  # 2 models x (base, sft)
    sft = [c for c in store.read_rows("candidates") if c.operator == "sft"]
    assert all(len(c.parent_ids) == 1 and c.parent_ids[0] in {b.candidate_id for b in store.read_rows("candidates")}
               for c in sft)
    held_out = [f"{t}/001" for t in TEMPLATES]
    reference = {derived_id("bt-a", "reference", conv) for conv in held_out}
    turns = sum(1 for row in store.read_rows("steps") if row.execution_id in reference)  # one decision per step
    per_checkpoint = sql(store, "SELECT candidate_id, count(*) AS n FROM decisions GROUP BY ALL").to_pylist()
    assert sorted(r["n"] for r in per_checkpoint) == [turns] * 4
    assert counts(store_uri)["closed_loop"] == 4 * 8
    assert sql(store, "SELECT count(DISTINCT conv_id) AS n FROM decisions").to_pylist()[0]["n"] == 8
    assert counts(store_uri)["train_steps"] == 2 * (2 + 5)  # base_epochs + sft_epochs per model
    assert {"sft-base:L4_completed", "turns-vs-workflow:sft"} <= set(summary)


def test_the_completion_delta_is_the_paired_mean_sql_computes(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    expected = sql(store, """
        WITH per_case AS (SELECT ckpt, conv_id, avg(completed::DOUBLE) AS done FROM closed_loop GROUP BY ALL)
        SELECT avg(s.done - b.done) AS delta FROM per_case s JOIN per_case b USING (conv_id)
        WHERE s.ckpt = 'sft' AND b.ckpt = 'base'""").to_pylist()[0]["delta"]
    row = sql(store, "SELECT * FROM gate_decisions WHERE gate = 'sft-base:L4_completed'").to_pylist()[0]
    assert row["delta"] == pytest.approx(expected)
    assert row["ci_low"] <= row["delta"] <= row["ci_high"] and row["n_cases"] == 8
    assert row["decision"] == ("reject" if row["ci_low"] <= 0 <= row["ci_high"] else "accept")


def test_a_closed_loop_run_that_completed_made_exactly_the_reference_calls(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    calls: dict[str, list[tuple[str, str]]] = {}
    for row in sorted(store.read_rows("steps"), key=lambda r: r.step):
        if row.kind == "tool_call":
            calls.setdefault(row.execution_id, []).append((row.name, row.args_json))
    runs = store.read_rows("closed_loop")
    same = {r.execution_id: calls.get(r.execution_id) == calls[derived_id("bt-a", "reference", r.conv_id)]
            for r in runs}
    assert all(same[r.execution_id] for r in runs if r.completed)
    assert any(r.completed for r in runs)


def test_a_second_call_of_the_run_adds_nothing(ran, prefect_server):
    store_uri, summary = ran
    before = counts(store_uri)
    assert better_turns(config=config(), store_uri=store_uri, run_id="bt-a") == summary
    assert counts(store_uri) == before


def test_the_report_draws(ran, tmp_path):
    store_uri, _ = ran
    path = write_report(store_uri, "bt-a", tmp_path / "bt.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


def test_configs_that_cannot_be_measured_are_refused():
    with pytest.raises(ValueError, match="must be held out"):
        config(better_turns={"eval_splits": ["train", "select"]})
    with pytest.raises(ValueError, match="not toolsim templates"):
        config(better_turns={"base_templates": ["nope"]})
