"""Resource algebra (engine.md section 1): every example of the table, plus edge cases."""

from __future__ import annotations

import doctest

import pytest

from engine import resources as res


def test_doctests_pass() -> None:
    """The module's >>> examples are part of its specification."""
    result = doctest.testmod(res)
    assert result.failed == 0
    assert result.attempted > 10


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (lambda: res.sub({"v": 5}, {"m": 2}), {"v": 5, "m": -2}),
        (lambda: res.add(None, {"v": 1}), {"v": 1}),
        (lambda: res.sub_existing({"v": 5}, {"v": 6, "m": 1}), {"v": -1}),
        (lambda: res.sub_existing(None, {"v": 1}), None),
        (lambda: res.sub_existing({"v": 5}, None), {"v": 5}),
        (lambda: res.sub_clamp({"v": 5}, {"v": 2, "m": 3}), {"v": 3, "m": 0}),
        (lambda: res.cmin({"v": 0}, {"v": -5, "m": 1}), {"v": -5, "m": 1}),
        (lambda: res.cmin(None, None), None),
        (lambda: res.cmin(None, {"v": 1}), {"v": 1}),
        (lambda: res.cmin_existing({"v": 5}, {"m": 1}), {"v": 5}),
        (lambda: res.cmin_existing(None, {"m": 1}), None),
        (lambda: res.merge_missing({"v": 5}, {"v": 0, "m": 3}), {"v": 5, "m": 3}),
        (lambda: res.merge_missing(None, None), None),
        (lambda: res.fit_in({"v": 5}, {"v": 1, "m": 1}), False),
        (lambda: res.fit_in({"v": -1}, {"v": 0}), True),
        (lambda: res.fit_undef({"v": 5}, {"v": 1, "m": 1}), True),
        (lambda: res.fit_actual({"v": -1}, {"v": 0}), False),
        (lambda: res.equals({"v": 5, "g": 0}, {"v": 5}), True),
        (lambda: res.equals(None, {}), False),
        (lambda: res.is_zero({}), True),
        (lambda: res.is_zero({"v": 0}), True),
        (lambda: res.equals_or_empty({"v": 0}, None), True),
        (lambda: res.no_negative({"v": 0, "m": 1}), True),
        (lambda: res.no_negative({"v": -1}), False),
        (lambda: res.over_g({"v": 1}, {"m": -1}), False),
        (lambda: res.under_g({"v": 1}, {"v": -1}), False),
        (lambda: res.match_any({"v": 1}, {"v": 0}), True),
        (lambda: res.match_any({"v": 1}, {"m": 1}), False),
        (lambda: res.exceeds_any({"v": 5}, {"v": 6}), True),
        (lambda: res.exceeds_any({"v": 5}, {"m": 6}), False),
    ],
)
def test_table_examples(expr: object, expected: object) -> None:
    """Each example of the engine.md section 1 table (plus None handling)."""
    assert callable(expr)
    assert expr() == expected


@pytest.mark.parametrize(
    ("r", "s", "expected"),
    [
        ({"v": 5, "m": 10}, {"v": 6, "m": 2}, False),  # one over-covered type is enough
        ({"v": 5}, {}, True),
        ({"v": 5, "m": 0}, {}, False),  # empty s: all of r must be > 0
        ({}, {}, False),
        ({"v": 5}, {"v": 5}, False),
        ({"v": 5}, {"v": 4}, True),
        ({"v": 5}, {"m": 4}, True),  # disjoint: r non-empty
        (None, {"m": 4}, False),
        (
            {"v": 2, "m": 2},
            {"v": 2},
            False,
        ),  # why yunikorn's sum test refused mixed-type asks (engine.md 8.12)
    ],
)
def test_gt_existing(r: dict[str, int] | None, s: dict[str, int] | None, expected: bool) -> None:
    """yunikorn's StrictlyGreaterThanOnlyExisting as defined in engine.md 1."""
    assert res.gt_existing(r, s) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (200.0, 200), (2**63 - 1, 2**63 - 1), (2**63, None), (-1, None), (200.5, None),
     (True, None), ("5", None), (float("inf"), None), (float("nan"), None)],
)  # fmt: skip
def test_validate_quantity(value: object, expected: int | None) -> None:
    """Quantities are non-negative integers up to 2**63-1; 200.0 counts as an integer."""
    assert res.validate_quantity(value) == expected
