"""Constructing environments from installed stdlib functions in the real subprocess
sandbox: a kept one, one the probe drops and one gate 2 drops, each with its record."""

from __future__ import annotations

import pytest

from schemas.configs import SandboxConfig
from suites.codemidas.build import pass_fraction
from suites.executors import make_executor
from tasks.loops.codemidas.construct import construct, source_function
from tasks.loops.codemidas.filters import split_of


@pytest.fixture(scope="module")
def executor():
    return make_executor(SandboxConfig(timeout_s=2.0))


def test_a_kept_environment_carries_its_checks_attempts_and_document(executor):
    found = construct(executor, "colorsys::rgb_to_yiq", seed=0, n_tests=12, site_limit=4, drop_leaky=False)
    assert found["candidate"]["stage_reached"] == "kept" and found["candidate"]["drop_reason"] is None
    assert [c["split"] for c in found["checks"]] == ["select", "holdout"]
    assert all(c["ref_passes"] and c["hollow_fails"] for c in found["checks"])
    env = found["environment"]
    assert env["stub"].rstrip().endswith("raise NotImplementedError()")
    assert [t["split"] for t in env["tests"]] == [split_of(i) for i in range(len(env["tests"]))]
    rows = {a["solver"]: a for a in found["attempts"]}
    # the retrieval solver imports the installed colorsys: the leak is found, not hidden
    assert rows["retrieval"]["leak_found"] and rows["retrieval"]["select_pass"] == 1.0
    assert rows["stub"]["select_pass"] == 0.0 and rows["stub"]["reviewer_verdict"] == "fail_confirmed"
    assert len(rows) == 1 + 2 + 4 + 1  # stub, trivial mutants, 4 site mutants, retrieval
    select = [t["expect"] for t in env["tests"] if t["split"] == "select"]
    assert found["evidence"]["gate1_select"]["mutants"] == 6 and pass_fraction(select, select) == 1.0
    assert found["evidence"]["attempt_rewards"]["retrieval"] == 1.0


def test_drop_leaky_drops_what_the_retrieval_solver_passes(executor):
    found = construct(executor, "colorsys::rgb_to_yiq", seed=0, n_tests=12, site_limit=0, drop_leaky=True)
    assert found["candidate"]["stage_reached"] == "leak" and found["environment"] is None


def test_dropped_candidates_keep_their_stage_and_reason(executor):
    probe = construct(executor, "quopri::ishex", seed=0, n_tests=12, site_limit=4, drop_leaky=False)
    assert probe["candidate"]["stage_reached"] == "probe" and probe["attempts"] == [] and probe["checks"] == []
    # _tuple_str has no mutable site: the stub and the two trivial mutants fail every test
    hard = construct(executor, "dataclasses::_tuple_str", seed=0, n_tests=24, site_limit=12, drop_leaky=False)
    assert hard["candidate"]["stage_reached"] == "gate2"
    assert hard["candidate"]["drop_reason"] == "every attempt failed it (3 attempts)"
    assert hard["evidence"]["gate1_select"]["ref_passes"]


def test_an_unknown_symbol_is_refused_with_its_module():
    with pytest.raises(ValueError, match="not a task function of the installed colorsys"):
        source_function("colorsys::no_such_function")
