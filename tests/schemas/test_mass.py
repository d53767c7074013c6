"""mass's config and tables: the workflows table's Arrow schema pinned, every mass_*
table registered, and an out-of-range parameter refused."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.mass import MassConfig, MassWorkflowRow
from schemas.tables import TABLES


def test_workflows_schema_is_pinned():
    s, i = pa.string(), pa.int64()
    expected = pa.schema([pa.field("run_id", s, nullable=False), pa.field("gen", i, nullable=False),
                          pa.field("wf_id", s, nullable=False), pa.field("parent_id", s, nullable=True),
                          pa.field("operator", s, nullable=False), pa.field("spec_json", s, nullable=False),
                          pa.field("author_model", s, nullable=False)])
    assert to_arrow_schema(MassWorkflowRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"mass_workflows", "mass_executions", "mass_pairwise", "mass_sft_examples", "mass_evals"} <= set(TABLES)


def test_config_defaults_and_bounds():
    config = RunConfig(loop="mass", suite="toolsim", budget=2)
    assert (config.mass.children, config.mass.max_roles, config.mass.repeats, config.mass.lineage) == (4, 4, 2, True)
    with pytest.raises(ValidationError, match="max_roles"):
        MassConfig(max_roles=7)
