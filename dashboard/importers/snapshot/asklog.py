"""What the scheduler itself says of a pending ask: why it has not been placed.

``dao.AllocationAskDAOInfo`` (``pkg/webservice/dao/allocation_ask_info.go``) carries,
beside the ask's resources, the scheduler's own reasons:

- ``allocationLog``: one entry per distinct failure message (``message``,
  ``lastOccurrence`` in nanoseconds, ``count``), kept by ``Allocation.LogAllocationFailure``;
  the messages are constants such as "Not enough queue quota" or "Preemption does not
  help", or a node predicate's own text;
- ``schedulingAttempted``: the scheduler has tried to place the ask at least once;
- ``triggeredScaleUp``: the ask asked the cluster autoscaler for a node.

All three are ``omitempty``: absent means empty, never tried, not asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.importers.snapshot.access import Reader

#: Largest count the scheduler keeps (``int32``).
_COUNT_MAX = 2**31 - 1


def scheduler_view(r: Reader, ask: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The ask's ``allocationLog``, ``schedulingAttempted`` and ``triggeredScaleUp``.

    Returns ``{"scheduler_log": [{"message", "last", "count"}], "scheduling_attempted",
    "triggered_scale_up"}``, the log newest first (``last`` in seconds since the epoch,
    None when the entry has no time).

    Raises:
        ImportFailure: naming the entry and field of a malformed log.
    """
    log: list[dict[str, Any]] = []
    for i, raw in enumerate(r.arr(ask.get("allocationLog") or [], f"{path}.allocationLog")):
        ep = f"{path}.allocationLog[{i}]"
        entry = r.obj(raw, ep)
        log.append(
            {
                "message": r.string(entry.get("message", ""), f"{ep}.message", required=False),
                "last": r.time_ns(entry.get("lastOccurrence"), f"{ep}.lastOccurrence"),
                "count": r.integer(entry.get("count", 0), f"{ep}.count", 0, _COUNT_MAX),
            }
        )
    log.sort(key=lambda e: (-(e["last"] or 0.0), e["message"]))
    return {
        "scheduler_log": log,
        "scheduling_attempted": r.flag(ask, "schedulingAttempted", path),
        "triggered_scale_up": r.flag(ask, "triggeredScaleUp", path),
    }
