"""The stages' retry policy: its configurable delays and the retry of a plain call."""

import pytest

from storage.errors import TerminalError, TransientError
from tasks.proposers.base import TransientProposerError
from tasks.runtime.retry import retry_delays, with_retries


def test_delays_default_to_1_4_16_and_read_comma_separated_seconds():
    assert retry_delays(None) == [1.0, 4.0, 16.0]
    assert retry_delays(" ") == [1.0, 4.0, 16.0]
    assert retry_delays("0.5,2") == [0.5, 2.0]


@pytest.mark.parametrize("value", ["1;4", "-1", "601", ",".join(["1"] * 11)])
def test_delays_that_are_not_bounded_seconds_are_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="RATCHET_RETRY_DELAYS_S"):
        retry_delays(value)


def failing(errors):
    """A call that raises each of ``errors`` in turn, then returns how often it was called."""
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return len(calls)

    return call


def test_transient_failures_are_retried_after_each_delay_in_turn():
    slept = []
    call = failing([TransientError("s3 down"), TransientProposerError("429")])
    assert with_retries(call, [1, 4, 16], slept.append) == 3
    assert slept == [1, 4]


def test_a_terminal_failure_is_raised_at_once():
    slept = []
    with pytest.raises(TerminalError, match="corrupted"):
        with_retries(failing([TerminalError("corrupted")]), [1, 4, 16], slept.append)
    assert slept == []


def test_the_last_transient_failure_propagates_once_the_delays_are_spent():
    slept = []
    errors = [TransientError(f"down {i}") for i in range(4)]
    with pytest.raises(TransientError, match="down 3"):
        with_retries(failing(errors), [1, 4, 16], slept.append)
    assert slept == [1, 4, 16]
