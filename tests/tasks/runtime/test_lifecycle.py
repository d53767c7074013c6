"""Ctrl-C is told apart from a failure even when the engine turned it into its own error."""

import pytest

from tasks.runtime.lifecycle import interrupted


def _raised_while_unwinding() -> ValueError:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ValueError("Task run is not set")  # what Prefect's task engine raised here once
    except ValueError as exc:
        return exc


def test_ctrl_c_itself_and_errors_raised_while_unwinding_from_it_are_interruptions():
    assert interrupted(KeyboardInterrupt())
    assert interrupted(_raised_while_unwinding())
    wrapped = RuntimeError("stage failed")
    wrapped.__cause__ = _raised_while_unwinding()
    assert interrupted(wrapped)


def test_an_ordinary_failure_is_not():
    assert not interrupted(ValueError("boom")) and not interrupted(None)
    try:
        try:
            raise OSError("disk full")
        except OSError:
            raise ValueError("then this")
    except ValueError as exc:
        assert not interrupted(exc)


def test_a_cycle_in_the_chain_ends():
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    assert not interrupted(a)
    with pytest.raises(ValueError):
        raise a
