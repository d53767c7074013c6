"""rpmem's config and tables: the spec's four tables registered, one schema pinned, and a
config that cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.rpmem import RPMemConfig, RPMSwapRow
from schemas.tables import TABLES


def test_swap_schema_is_pinned():
    expected = pa.schema([
        pa.field("run_id", pa.string(), nullable=False), pa.field("candidate_id", pa.string(), nullable=False),
        pa.field("base", pa.string(), nullable=False), pa.field("decoder_init", pa.string(), nullable=False),
        pa.field("setting", pa.string(), nullable=False), pa.field("score", pa.float64(), nullable=False),
        pa.field("n_questions", pa.int64(), nullable=False),
    ])
    assert to_arrow_schema(RPMSwapRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"rpm_sessions", "rpm_gate_stats", "rpm_qa", "rpm_swap"} <= set(TABLES)


def test_config_defaults_and_refusals():
    config = RunConfig(loop="rpmem", suite="arith", budget=1)
    assert config.SPEC.modifies == "memory" and config.rpmem.swap_base() == "teacher"
    with pytest.raises(ValidationError, match="bases are 'student' and 'teacher'"):
        RPMemConfig(base="large")
    with pytest.raises(ValidationError, match="set at least one above 0"):
        RPMemConfig(compile_steps=0, merge_steps=0)
