"""arenaflow's config and tables: the skills table's Arrow schema pinned, every af_*
table registered, and an out-of-range parameter refused."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arenaflow import AFSkillRow, ArenaFlowConfig
from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.tables import TABLES


def test_skills_schema_is_pinned():
    s, i, f, b = pa.string(), pa.int64(), pa.float64(), pa.bool_()
    expected = pa.schema([pa.field(n, t, nullable=False) for n, t in (
        ("run_id", s), ("round", i), ("skill_id", s), ("ver", i), ("template", s), ("option", s), ("text", s),
        ("utility", f), ("n_obs", i), ("active", b))])
    assert to_arrow_schema(AFSkillRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"af_trajectories", "af_matches", "af_key_steps", "af_skill_usage", "af_skills", "train_steps"} <= set(TABLES)


def test_config_defaults_and_bounds():
    config = RunConfig(loop="arenaflow", suite="toolsim", budget=2)
    assert (config.arenaflow.group_size, config.arenaflow.top_k, config.arenaflow.library) == (8, 2, True)
    with pytest.raises(ValidationError, match="group_size"):
        ArenaFlowConfig(group_size=1)
