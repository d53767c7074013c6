"""graphskillevo's config and tables: the skills table's Arrow schema pinned, every gse_*
table registered, and a config that cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.graphskillevo import GraphSkillEvoConfig, GSESkillRow
from schemas.tables import TABLES


def test_skills_schema_is_pinned():
    expected = pa.schema([
        pa.field("run_id", pa.string(), nullable=False), pa.field("skill_id", pa.string(), nullable=False),
        pa.field("gen", pa.int64(), nullable=False), pa.field("parents", pa.list_(pa.string()), nullable=False),
        pa.field("op", pa.string(), nullable=False), pa.field("principles_json", pa.string(), nullable=False),
        pa.field("graph_json", pa.string(), nullable=False), pa.field("valid", pa.bool_(), nullable=False),
        pa.field("reason", pa.string(), nullable=True), pa.field("candidate_id", pa.string(), nullable=True),
        pa.field("rationale", pa.string(), nullable=False),
    ])
    assert to_arrow_schema(GSESkillRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"gse_skills", "gse_train_runs", "gse_val_scores", "gse_population", "gse_test"} <= set(TABLES)


def test_defaults_are_the_papers_and_an_empty_rotation_is_refused():
    config = RunConfig(loop="graphskillevo", suite="toolsim", budget=5)
    assert (config.graphskillevo.population, config.graphskillevo.batch, config.graphskillevo.max_failures) == (4, 15, 5)
    assert config.SPEC.default_budget == 5
    with pytest.raises(ValidationError, match=r"use \[mutate\] or \[mutate, crossover\]"):
        GraphSkillEvoConfig(operators=())
