"""Property tests: the engine's fast paths give exactly what the straightforward code gives.

Each fast path (engine/preemption.py, engine/queues.py) is compared with the
plain computation it replaces, over random inputs with many ties.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.model import Allocation
from engine.preemption import victim_order_key, youngest_first

PROPS = settings(max_examples=300, deadline=None)


@st.composite
def _allocations(draw: st.DrawFn) -> list[list[Allocation]]:
    """Groups of allocations with unique keys and few distinct ``created`` values (ties)."""
    groups: list[list[Allocation]] = []
    number = itertools.count()
    for _ in range(draw(st.integers(0, 4))):
        group = []
        for _ in range(draw(st.integers(0, 12))):
            i = next(number)
            group.append(
                Allocation(
                    key=f"a{draw(st.integers(0, 999)):03d}-{i}",
                    queue="root.q",
                    node="n",
                    resources={"vcore": 1},
                    originator=draw(st.booleans()),
                    allow_preemption=draw(st.sampled_from((True, True, True, False))),
                    created=draw(
                        st.one_of(
                            st.integers(-3, 3).map(float),
                            st.floats(-1e9, 1e9, allow_nan=False),
                            st.sampled_from((0.0, -0.0)),
                        )
                    ),
                )
            )
        groups.append(group)
    return groups


@PROPS
@given(_allocations(), st.integers(1, 5), st.integers(0, 3))
def test_youngest_first_is_the_sorted_filtered_order(
    groups: list[list[Allocation]], batch: int, modulo: int
) -> None:
    """Bands of ``created`` give exactly sorted(filter(keep, all), key=victim_order_key)."""

    def keep(a: Allocation) -> bool:
        return modulo == 0 or int(a.key.rsplit("-", 1)[1]) % (modulo + 1) != 0

    expected = sorted(filter(keep, itertools.chain(*groups)), key=victim_order_key)
    assert list(youngest_first(groups, keep, batch=batch)) == expected


@PROPS
@given(_allocations(), st.integers(1, 5), st.integers(0, 30))
def test_youngest_first_prefix_is_lazy_and_exact(
    groups: list[list[Allocation]], batch: int, take: int
) -> None:
    """Stopping early (as the additional-victims loop does) gives the sorted prefix."""
    expected = sorted(itertools.chain(*groups), key=victim_order_key)[:take]
    got = list(itertools.islice(youngest_first(groups, lambda a: True, batch=batch), take))
    assert got == expected


def test_youngest_first_with_nan_falls_back_to_a_plain_sort() -> None:
    """A NaN ``created`` (library callers only: JSON has none) still gives the sorted order."""
    allocs = [
        Allocation(f"k{i}", "root.q", "n", {"vcore": 1}, created=c)
        for i, c in enumerate((1.0, float("nan"), 3.0, 2.0))
    ]
    expected = sorted(allocs, key=victim_order_key)
    assert list(youngest_first([allocs], lambda a: True)) == expected
