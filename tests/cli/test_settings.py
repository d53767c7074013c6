"""`ratchet run --set SECTION.FIELD=VALUE`: typed values, validation that names the field,
and errors that name the section."""

import pytest
from pydantic import ValidationError

from cli.errors import UsageError
from cli.running import loop_sections, make_config, parse_settings


def config(loop: str, suite: str, *settings: str, timeout: float = 10.0):
    return make_config(loop, suite, 4, 0, 1, None, "mutate", 16, [], timeout, False, list(settings))


def test_values_are_read_as_yaml():
    assert parse_settings(["opd.method=dial", "grpo.lr=3e-5", "heal.accept_all=true", "grpo.categories=[add, sub]",
                           "grow.gate_every=8"]) == {
        "opd": {"method": "dial"}, "grpo": {"lr": "3e-5", "categories": ["add", "sub"]},
        "heal": {"accept_all": True}, "grow": {"gate_every": 8}}


def test_settings_reach_the_run_config():
    c = config("opd", "arith", "opd.method=dial", "grpo.lr=3e-5", "grpo.categories=[add, sub]")
    assert c.opd.method == "dial" and c.grpo.lr == 3e-5 and c.grpo.categories == ("add", "sub")
    assert c.opd.lr == type(c.opd)().lr  # untouched fields keep their defaults
    assert config("self_healing", "toolsim", "heal.accept_all=true").heal.accept_all is True


def test_sandbox_settings_merge_with_the_timeout_option():
    c = config("evolve", "circle_packing", "sandbox.memory_mb=512", timeout=3.0)
    assert (c.sandbox.timeout_s, c.sandbox.memory_mb) == (3.0, 512)


def test_every_loop_parameter_group_is_a_section():
    assert {"evolve", "grpo", "opd", "ppo_pact", "paired_rollouts", "harness_bandit", "heal", "grow", "medrsi",
            "designer", "sandbox"} == set(loop_sections())


@pytest.mark.parametrize("pair, message", [
    ("opd=dial", "SECTION.FIELD=VALUE"),
    ("opd.method", "SECTION.FIELD=VALUE"),
    ("bogus.x=1", "unknown section 'bogus'"),
])
def test_malformed_settings_say_what_is_wrong(pair, message):
    with pytest.raises(ValueError, match=message):
        parse_settings([pair])


def test_invalid_values_name_the_field():
    with pytest.raises(ValidationError, match="opd.method"):
        config("opd", "arith", "opd.method=nope")
    with pytest.raises(ValidationError, match="grow.window_size"):
        config("growing_harness", "toolsim", "grow.window_size=0")
    with pytest.raises(UsageError, match="section 'opd' has no field 'no_such_field'; its fields: .*method"):
        config("opd", "arith", "opd.no_such_field=1")
