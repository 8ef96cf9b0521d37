"""The queue tree as a user the queue ACLs restrict (a *tenant*) sees it.

Its queues (those it may view, :mod:`dashboard.access.grants`) are shown whole; the
queues above them are shown as the structure they hang from (their paths are part of
the tenant's own); every other queue appears only as its share of its parent: the
hidden children of one parent are folded into one row, ``<parent>.(other queues)``,
holding their summed usage and guarantees and nothing else (no name, no max, no
applications).  A queue name never holds parentheses or a space in YuniKorn, so the
folded row's path names no real queue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from dashboard.access.grants import Access
from dashboard.charts.values import QueueRow

OTHER_QUEUES = "(other queues)"


def _add(total: dict[str, int], more: Mapping[str, int] | None) -> None:
    for rtype, quantity in (more or {}).items():
        total[rtype] = total.get(rtype, 0) + int(quantity)


def is_folded(path: str) -> bool:
    """Whether *path* is a folded row of :func:`tenant_rows`."""
    return path.endswith("." + OTHER_QUEUES)


def _fold(parent: str, hidden: Sequence[QueueRow]) -> QueueRow:
    used: dict[str, int] = {}
    preempting: dict[str, int] = {}
    guaranteed: dict[str, int] = {}
    allocated: dict[str, int] = {}
    has_guarantee = has_allocated = False
    for row in hidden:
        _add(used, row.used)
        _add(preempting, row.preempting)
        if row.guaranteed is not None:
            has_guarantee = True
            _add(guaranteed, row.guaranteed)
        if row.allocated is not None:
            has_allocated = True
            _add(allocated, row.allocated)
    return QueueRow(
        path=f"{parent}.{OTHER_QUEUES}",
        used=used,
        preempting=preempting,
        guaranteed=guaranteed if has_guarantee else None,
        allocated=allocated if has_allocated else None,
    )


def tenant_rows(rows: Iterable[QueueRow], access: Access) -> list[QueueRow]:
    """*rows* as *access*'s user may see them (all of them for staff and readers of
    every queue): its queues, their ancestors, and one folded row per parent for the
    other queues below it, sorted by path."""
    rows = list(rows)
    if not access.is_tenant:
        return rows
    viewable = {r.path for r in rows if access.may_view(r.path)}
    ancestors: set[str] = set()
    for path in viewable:
        head, dot, _ = path.rpartition(".")
        while dot:
            ancestors.add(head)
            head, dot, _ = head.rpartition(".")
    shown = viewable | ancestors
    kept: list[QueueRow] = []
    hidden: dict[str, list[QueueRow]] = {}
    for row in rows:
        if row.path in viewable:
            kept.append(row)
            continue
        if row.path in ancestors:  # its aggregate: no lowered max of a change it cannot view
            kept.append(replace(row, lowered_max=None, lowered_planned=False))
            continue
        parent, dot, _ = row.path.rpartition(".")
        if dot and parent in shown:  # a topmost hidden queue: its share of the parent
            hidden.setdefault(parent, []).append(row)
    kept.extend(_fold(parent, children) for parent, children in hidden.items())
    # a parent's own queues first, its folded row last
    return sorted(kept, key=lambda r: [(part == OTHER_QUEUES, part) for part in r.path.split(".")])
