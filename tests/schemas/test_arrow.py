from datetime import datetime, timezone

import pyarrow as pa
import pytest

from schemas.arrow import rows_to_table, table_to_rows, to_arrow_schema
from schemas.rows import CandidateRow, GateDecisionRow, RegistryRow, TrainStepRow
from schemas.tables import TABLES, table_spec


def test_gate_decision_schema_is_pinned():
    expected = pa.schema(
        [
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("decision_id", pa.string(), nullable=False),
            pa.field("round", pa.int64(), nullable=False),
            pa.field("candidate_id", pa.string(), nullable=False),
            pa.field("gate", pa.string(), nullable=False),
            pa.field("baseline_id", pa.string(), nullable=True),
            pa.field("decision", pa.string(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("improved_cases", pa.list_(pa.string()), nullable=False),
            pa.field("regressed_cases", pa.list_(pa.string()), nullable=False),
            pa.field("select_score", pa.float64(), nullable=True),
            pa.field("baseline_score", pa.float64(), nullable=True),
            pa.field("delta", pa.float64(), nullable=True),
            pa.field("ci_low", pa.float64(), nullable=True),
            pa.field("ci_high", pa.float64(), nullable=True),
            pa.field("n_cases", pa.int64(), nullable=False),
            pa.field("scorer_version", pa.string(), nullable=False),
            pa.field("evidence_json", pa.string(), nullable=False),
        ]
    )
    assert to_arrow_schema(GateDecisionRow).equals(expected)


def test_registry_and_train_step_types_are_pinned():
    registry = to_arrow_schema(RegistryRow)
    assert registry.field("event_at").type == pa.timestamp("us", tz="UTC")
    assert registry.field("holdout_score").nullable
    assert registry.field("version").type == pa.int64()
    train = to_arrow_schema(TrainStepRow)
    assert train.field("metrics").type == pa.map_(pa.string(), pa.float64())
    assert train.names[-2:] == ["worker", "device"]
    assert all(train.field(c).type == pa.string() and train.field(c).nullable for c in ("worker", "device"))  # old parts lack them


def test_candidate_schema_is_pinned_with_nullable_llm_cost_columns_last():
    expected = pa.schema(
        [
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("candidate_id", pa.string(), nullable=False),
            pa.field("round", pa.int64(), nullable=False),
            pa.field("parent_ids", pa.list_(pa.string()), nullable=False),
            pa.field("operator", pa.string(), nullable=False),
            pa.field("proposer", pa.string(), nullable=False),
            pa.field("artifact_kind", pa.string(), nullable=False),
            pa.field("artifact_uri", pa.string(), nullable=False),
            pa.field("island", pa.int64(), nullable=False),
            pa.field("summary", pa.string(), nullable=False),
            pa.field("tokens_in", pa.int64(), nullable=True),  # old parts lack the last three
            pa.field("tokens_out", pa.int64(), nullable=True),
            pa.field("latency_s", pa.float64(), nullable=True),
        ]
    )
    assert to_arrow_schema(CandidateRow).equals(expected)


def test_every_table_has_key_columns_and_run_id():
    for name, spec in TABLES.items():
        schema = to_arrow_schema(spec.model)
        assert "run_id" in schema.names, name
        for column in spec.key:
            assert column in schema.names, (name, column)
        assert spec.model.__doc__ and "Key" in spec.model.__doc__, name


def test_rows_round_trip_through_arrow_including_maps():
    rows = [
        TrainStepRow(run_id="r", candidate_id="c", step=1, loss=0.5, metrics={"kl": 0.1, "acc": 1.0},
                     tokens=10, samples=2, wall_s=0.01, worker="local", device="cpu"),
        TrainStepRow(run_id="r", candidate_id="c", step=2, loss=0.25, metrics={}, tokens=12, samples=2, wall_s=0.02,
                     worker="gpu-worker", device="cuda:0"),
    ]
    table = rows_to_table(TrainStepRow, rows)
    assert table.num_rows == 2
    assert table_to_rows(TrainStepRow, table) == rows


def test_timestamps_stay_utc():
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    row = RegistryRow(run_id="r", name="n", version=1, candidate_id="c", stage="stable", alias="champion",
                      decision_id="d", select_score=1.0, holdout_score=None, event_at=at)
    back = table_to_rows(RegistryRow, rows_to_table(RegistryRow, [row]))[0]
    assert back.event_at == at


def test_wrong_row_type_and_unknown_table_are_named():
    with pytest.raises(TypeError, match="TrainStepRow"):
        rows_to_table(TrainStepRow, [object()])
    with pytest.raises(KeyError, match="unknown table 'nope'"):
        table_spec("nope")
