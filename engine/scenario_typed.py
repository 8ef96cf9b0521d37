"""Scenario JSON bytes -> the document, its allocations decoded straight into
:class:`~engine.model.Allocation` objects (msgspec's typed decoding).

The command line's fast way in: a hundred thousand allocations are not built as
dicts and read a second time. :func:`decode_typed` answers only for a document it
can vouch for - every allocation of the contract's types and within its ranges, as
:func:`engine.scenario_cluster.read_allocations` would read it - and None for
anything else (bad JSON, a value of another type, a zero or negative quantity, a
priority beyond 32 bits ...), which then goes the usual way and gets its usual
answer or error. What depends on the rest of the document (unique keys, a known
leaf queue, a known node) is checked by :func:`~engine.scenario.parse_scenario`.
"""

from __future__ import annotations

import msgspec

from engine.model import Allocation
from engine.queues import INT32_MAX, INT32_MIN
from engine.resources import MAX_QUANTITY

_FINITE = 1.7976931348623157e308  # the largest float


def decode_typed(raw: bytes) -> tuple[dict[str, object], list[Allocation] | None] | None:
    """The decoded document and its allocations (None when it has none), or None when
    the usual way must read it (see the module docstring).

    The document's ``allocations`` entry is left as it was in the JSON (the objects are
    the second value), so its length is the list's.
    """
    try:
        top = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
        doc: dict[str, object] = {k: msgspec.json.decode(v) for k, v in top.items()
                                  if k != "allocations"}  # fmt: skip
        raw_allocations = top.get("allocations")
        if raw_allocations is None or (
            len(raw_allocations) < 16 and bytes(raw_allocations).strip() == b"null"
        ):
            return doc, None
        allocations = msgspec.json.decode(raw_allocations, type=list[Allocation])
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, MemoryError):
        return None  # the usual way reads it and names what is wrong
    if not _plain(allocations):
        return None
    # keep the document's own key order: the allocations where the JSON had them
    ordered = {k: (allocations if k == "allocations" else doc[k]) for k in top}
    return ordered, allocations


def _plain(allocations: list[Allocation]) -> bool:
    """Whether every allocation's values are what the usual reading would take as they
    are: a non-empty key and node, positive quantities, a 32-bit priority, a finite time."""
    max_q = MAX_QUANTITY
    lo, hi = INT32_MIN, INT32_MAX
    for a in allocations:
        if not a.key or not a.node or not lo <= a.priority <= hi:
            return False
        if not -_FINITE <= a.created <= _FINITE:
            return False
        for q in a.resources.values():
            if not 0 < q <= max_q:
                return False
    return True
