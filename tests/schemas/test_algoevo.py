"""algoevo's config and tables: the spec's four tables registered, the cards schema
pinned, and configs it cannot run refused with the fix."""

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas.algoevo import AECardRow
from schemas.arrow import to_arrow_schema
from schemas.configs import RunConfig
from schemas.tables import TABLES

SUITE = "circle_packing+bin_packing+lasso"


def test_cards_schema_is_pinned():
    s, i, f = pa.string(), pa.int64(), pa.float64()
    names = [("run_id", s), ("id", s), ("task_id", s), ("position", i), ("round", i), ("node", s), ("parent", s),
             ("family", s), ("modification", s), ("conditions", s), ("rationale", s), ("before", f), ("after", f)]
    expected = pa.schema([pa.field(n, t, nullable=False) for n, t in names]
                         + [pa.field("delta", f, nullable=True), pa.field("eval_idx", i, nullable=False)])
    assert to_arrow_schema(AECardRow).equals(expected)


def test_the_spec_tables_are_registered():
    assert {"ae_cards", "ae_nodes", "ae_patterns", "ae_task_runs"} <= set(TABLES)


def test_config_defaults_and_refusals():
    config = RunConfig(loop="algoevo", suite=SUITE, budget=4)
    assert config.algoevo.tasks[-1] == "bin_packing" and not config.algoevo.inherit_code
    assert config.evaluated_suites() == ("circle_packing", "lasso", "bin_packing")
    assert config.algoevo.min_tasks == 2 and config.SPEC.modifies == "skills"
    with pytest.raises(ValidationError, match="algoevo.tasks must name tasks among"):
        RunConfig(loop="algoevo", suite=SUITE, budget=4, algoevo={"tasks": ["toolsim"]})
    with pytest.raises(ValidationError, match="use proposer='mutate'"):
        RunConfig(loop="algoevo", suite=SUITE, budget=4, proposer="grammar")
    with pytest.raises(ValidationError, match="algoevo has no llm path"):
        RunConfig(loop="algoevo", suite=SUITE, budget=4, proposer="llm")
    with pytest.raises(ValidationError, match="drop --param"):
        RunConfig(loop="algoevo", suite=SUITE, budget=4, suite_params={"datasets": "or1"})
