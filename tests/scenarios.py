"""The small cluster most dashboard, integration and reliability tests start from.

On the tests' import path through ``pythonpath = ["tests"]`` (pyproject.toml), so
every suite imports the same one: ``from scenarios import small_scenario``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
"""The scenario's ``now``; allocations were created 1000 s to 993 s before it."""

SMALL_ASKS = [{"key": "ask-1", "queue": "root.b", "resources": {"vcore": 3000}, "priority": 5}]


def small_scenario(
    *, enabled: bool = True, delay: float = 60.0, round_request: bool = False
) -> dict[str, Any]:
    """root.a (guaranteed 2 cores, delay) with leaves x and y; root.b with a guarantee.

    Eight 1-core allocations alternate between root.a.x and root.a.y (k0..k7, k7
    youngest); node n1 has 10 cores. With *round_request* the document carries a
    round request whose asks (:data:`SMALL_ASKS`) an import stores as pending asks.
    """
    now = T0.timestamp()
    doc: dict[str, Any] = {
        "now": now,
        "partition": {"quota_preemption_enabled": enabled, "miss": 0.0},
        "queues": {
            "name": "root",
            "children": [
                {
                    "name": "a",
                    "guaranteed": {"vcore": 2000},
                    "quota_preemption_delay": delay,
                    "children": [{"name": "x"}, {"name": "y"}],
                },
                {"name": "b", "guaranteed": {"vcore": 5000}},
            ],
        },
        "nodes": [{"id": "n1", "capacity": {"vcore": 10000}}],
        "allocations": [
            {
                "key": f"k{i}",
                "app": f"app-{i % 2}",
                "queue": "root.a.x" if i % 2 else "root.a.y",
                "node": "n1",
                "resources": {"vcore": 1000},
                "created": now - 1000 + i,
            }
            for i in range(8)
        ],
    }
    if round_request:
        doc["request"] = {"type": "round", "asks": [dict(a) for a in SMALL_ASKS]}
    return doc


DEEP_VICTIM = "root.deep.l2.l3.l4"


def deep_victim_scenario() -> dict[str, Any]:
    """:func:`small_scenario` grown past 60 queues (root.many with 70 leaves), with a
    chain root.deep.l2.l3.l4 whose leaf holds allocation ``far`` (app ``app-far``, 1 core
    on n1): a victim below the three levels a big tree shows at once."""
    doc = small_scenario()
    doc["queues"]["children"].append(
        {"name": "many", "children": [{"name": f"q{i}"} for i in range(70)]}
    )
    deep: dict[str, Any] = {"name": "l4"}
    for name in ("l3", "l2", "deep"):
        deep = {"name": name, "children": [deep]}
    doc["queues"]["children"].append(deep)
    doc["allocations"].append(
        {
            "key": "far",
            "app": "app-far",
            "queue": DEEP_VICTIM,
            "node": "n1",
            "resources": {"vcore": 1000},
        }
    )
    return doc
