"""rsiagent's config and tables: the spec's four tables registered, one schema pinned,
and a config that cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.rsiagent import RSIAgentConfig, RSATestRunRow
from schemas.tables import TABLES


def test_test_runs_schema_is_pinned():
    expected = pa.schema([
        pa.field("run_id", pa.string(), nullable=False), pa.field("task_id", pa.string(), nullable=False),
        pa.field("arm", pa.string(), nullable=False), pa.field("mem_snapshot", pa.string(), nullable=False),
        pa.field("partial", pa.float64(), nullable=False), pa.field("binary", pa.bool_(), nullable=False),
        pa.field("grader_ver", pa.string(), nullable=False),
    ])
    assert to_arrow_schema(RSATestRunRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"rsa_practice", "rsa_runs", "rsa_memory", "rsa_test_runs"} <= set(TABLES)


def test_config_defaults_and_refusals():
    config = RunConfig(loop="rsiagent", suite="toolsim", budget=3)
    assert config.rsiagent.events == ("calm", "faulty", "stormy") and config.SPEC.modifies == "memory"
    with pytest.raises(ValidationError, match="known: calm, faulty, stormy"):
        RSIAgentConfig(events=("storm",))
    with pytest.raises(ValidationError, match="must include 'frozen'"):
        RSIAgentConfig(arms=("none",))
