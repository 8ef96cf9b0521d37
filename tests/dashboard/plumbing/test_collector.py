"""collector_paused: the cyclic garbage collector is off inside, as it was after."""

from __future__ import annotations

import gc

import pytest

from dashboard.plumbing.collector import collector_paused


def _nested_then_raise() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as it found it
        raise ValueError("inside")


def test_paused_inside_and_restored_after_even_on_error() -> None:
    """Off in the block (nested too), on again after, also when the block raises."""
    assert gc.isenabled()
    with pytest.raises(ValueError, match="inside"):
        _nested_then_raise()
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    """A block inside code that turned the collector off does not turn it on."""
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
