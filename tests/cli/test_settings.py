"""`ratchet run --set SECTION.FIELD=VALUE`: typed values, validation that names the field,
and errors that name the section."""

import pytest
from pydantic import ValidationError

from cli.errors import UsageError
from cli.running import make_config, parse_settings


def config(loop: str, suite: str, *settings: str, timeout: float = 10.0):
    return make_config(loop, suite, 4, 0, 1, None, "mutate", 16, [], timeout, False, list(settings))


def test_values_are_read_as_yaml():
    assert parse_settings(["paired_rollouts.noise_pairing=shared", "grpo.lr=3e-5", "grpo.categories=[add, sub]",
                           "grpo.dropout=true", "grpo.group_size=8"], "paired_rollouts") == {
        "paired_rollouts": {"noise_pairing": "shared"},
        "grpo": {"lr": "3e-5", "categories": ["add", "sub"], "dropout": True, "group_size": 8}}


def test_settings_reach_the_run_config():
    c = config("opd", "arith", "opd.method=dial", "opd.categories=[add, sub]")
    assert c.opd.method == "dial" and c.opd.categories == ("add", "sub")
    assert c.opd.lr == type(c.opd)().lr  # untouched fields keep their defaults
    assert config("self_healing", "toolsim", "heal.accept_all=true").heal.accept_all is True
    assert config("grpo", "arith", "grpo.lr=3e-5").grpo.lr == 3e-5


def test_sandbox_settings_merge_with_the_timeout_option():
    c = config("evolve", "circle_packing", "sandbox.memory_mb=512", timeout=3.0)
    assert (c.sandbox.timeout_s, c.sandbox.memory_mb) == (3.0, 512)


@pytest.mark.parametrize("loop, sections", [
    ("evolve", {"evolve", "sandbox"}),
    ("aide2", {"evolve", "sandbox"}),
    ("self_healing", {"evolve", "heal", "sandbox"}),
    ("designer_rsi", {"evolve", "designer", "sandbox"}),
    ("graphskillevo", {"evolve", "graphskillevo", "sandbox"}),
    ("modular_rsi", {"evolve", "modular_rsi", "sandbox"}),
    ("grpo", {"grpo", "sandbox"}),
    ("opd", {"opd", "sandbox"}),
    ("harness_bandit", {"grpo", "harness_bandit", "sandbox"}),
])
def test_a_loop_has_exactly_its_own_sections(loop, sections):
    from schemas.loops import config_class

    assert set(config_class(loop).sections()) == sections


def test_another_loops_section_is_refused_naming_the_loops_own():
    with pytest.raises(UsageError, match="evolve has no section 'grpo'; its sections: evolve, sandbox"):
        config("evolve", "circle_packing", "grpo.lr=1e-3")


@pytest.mark.parametrize("pair, message", [
    ("opd=dial", "SECTION.FIELD=VALUE"),
    ("opd.method", "SECTION.FIELD=VALUE"),
    ("bogus.x=1", "opd has no section 'bogus'"),
])
def test_malformed_settings_say_what_is_wrong(pair, message):
    with pytest.raises(ValueError, match=message):
        parse_settings([pair], "opd")


def test_invalid_values_name_the_field():
    with pytest.raises(ValidationError, match="opd.method"):
        config("opd", "arith", "opd.method=nope")
    with pytest.raises(ValidationError, match="grow.window_size"):
        config("growing_harness", "toolsim", "grow.window_size=0")
    with pytest.raises(UsageError, match="section 'opd' has no field 'no_such_field'; its fields: .*method"):
        config("opd", "arith", "opd.no_such_field=1")


def test_a_loop_preflight_refuses_a_bad_name_before_the_run_starts():
    with pytest.raises(UsageError, match=r"^harness_or_model: no harness 'foo' for harness_or_model; known: native"):
        config("harness_or_model", "toolsim", "harness_or_model.harness_a=foo")
    assert config("harness_or_model", "toolsim", "harness_or_model.harness_a=neutral",
                  "harness_or_model.harness_b=native").harness_or_model.harness_a == "neutral"
