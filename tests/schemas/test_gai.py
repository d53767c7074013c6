"""gai's config and tables: the versions table's Arrow schema pinned, the three spec tables
registered, and the LLM proposer refused (a protocol proposes nothing) with what to use instead."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.gai import GAIVersionRow
from schemas.tables import TABLES


def test_versions_schema_is_pinned():
    s, i, f = pa.string(), pa.int64(), pa.float64()
    expected = pa.schema([
        pa.field("run_id", s, nullable=False), pa.field("flow_id", s, nullable=False),
        pa.field("ver", i, nullable=False), pa.field("candidate_id", s, nullable=False),
        pa.field("changed_components", pa.list_(s), nullable=False),
        pa.field("internal_score", f), pa.field("external_score", f), pa.field("gap", f),
        pa.field("label", s, nullable=False)])
    assert to_arrow_schema(GAIVersionRow).equals(expected), to_arrow_schema(GAIVersionRow)


def test_the_spec_tables_are_registered():
    assert {"gai_components", "gai_versions", "gai_classification"} <= set(TABLES)


def test_config_defaults_and_the_llm_proposer_refused():
    config = RunConfig(loop="gai", suite="spin", budget=1)
    assert (config.gai.loops, config.gai.include_failed, config.SPEC.family) == ((), True, "protocol")
    with pytest.raises(ValidationError, match="gai measures fixed arms"):
        RunConfig(loop="gai", suite="spin", budget=1, proposer="llm")
