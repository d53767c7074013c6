"""mace's config and tables: the spec's five tables registered, one schema pinned, and a
config that cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.mace import MaceConfig, MaceRelationRow
from schemas.tables import TABLES


def test_relations_schema_is_pinned():
    expected = pa.schema([
        pa.field("run_id", pa.string(), nullable=False), pa.field("ver", pa.string(), nullable=False),
        pa.field("src", pa.string(), nullable=False), pa.field("dst", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False), pa.field("weight", pa.float64(), nullable=False),
    ])
    assert to_arrow_schema(MaceRelationRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"mace_units", "mace_relations", "mace_injections", "mace_outputs", "mace_runs"} <= set(TABLES)


def test_config_defaults_and_refusals():
    config = RunConfig(loop="mace", suite="toolsim", budget=3, start_from="champion")
    assert config.mace.selector == "joint" and config.SPEC.modifies == "memory"
    with pytest.raises(ValidationError, match="known: joint, factorised"):
        MaceConfig(selector="both")
    with pytest.raises(ValidationError, match="must include 'memory'"):
        MaceConfig(arms=("no_memory",))
