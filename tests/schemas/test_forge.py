"""forge's config and tables: the spec's six tables registered, one schema pinned, and a
config that cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.forge import STRATEGIES, FGStagnationRow, ForgeConfig
from schemas.tables import TABLES


def test_stagnation_schema_is_pinned():
    expected = pa.schema([
        pa.field("run_id", pa.string(), nullable=False), pa.field("step", pa.int64(), nullable=False),
        pa.field("best_val", pa.float64(), nullable=False),
        pa.field("steps_since_improve", pa.int64(), nullable=False),
        pa.field("synthesized", pa.bool_(), nullable=False),
    ])
    assert to_arrow_schema(FGStagnationRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"fg_prompts", "fg_trajs", "fg_failure_modes", "fg_synth", "fg_stagnation", "fg_cost"} <= set(TABLES)


def test_config_defaults_and_refusals():
    config = RunConfig(loop="forge", suite="toolsim", budget=3)
    assert config.forge.strategies == STRATEGIES and len(STRATEGIES) == 4 and config.SPEC.modifies == "rules"
    assert config.SPEC.starts_from_champion
    with pytest.raises(ValidationError, match="known: same_failure, counter_example, boundary, distractor"):
        ForgeConfig(strategies=("paraphrase",))
    with pytest.raises(ValidationError):
        ForgeConfig(patience=0)
