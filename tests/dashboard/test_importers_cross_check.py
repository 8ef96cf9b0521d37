"""The importer's cross-check of every queue's allocatedResource against its allocations."""

from __future__ import annotations

import json
from typing import Any

from shared_fixtures import FIXTURES

from dashboard.importers import parse_snapshot
from dashboard.importers.quantities import format_resource

REST = FIXTURES / "rest"


def _clear_allocated(queue: dict[str, Any]) -> None:
    queue["allocatedResource"] = {}
    for child in queue.get("children") or []:
        _clear_allocated(child)


def test_every_queue_is_checked_against_the_sum_of_its_subtree() -> None:
    """With every queue claiming nothing allocated, each queue holding allocations in its
    subtree is reported with exactly their sum (preempted ones included)."""
    files = {p.name: p.read_bytes() for p in sorted(REST.glob("partition*.json"))}
    tree = json.loads(files["partition_queues.json"])
    _clear_allocated(tree)
    files["partition_queues.json"] = json.dumps(tree).encode()
    imported = parse_snapshot(files)
    expected: dict[str, dict[str, int]] = {}
    for a in imported.scenario["allocations"]:
        parts = a["queue"].split(".")
        for i in range(1, len(parts) + 1):
            sums = expected.setdefault(".".join(parts[:i]), {})
            for t, q in a["resources"].items():
                sums[t] = sums.get(t, 0) + q
    assert len(expected) > 3
    reported = sorted(w for w in imported.warnings if " allocatedResource " in w)
    assert reported == sorted(
        f"partition_queues.json: {path} allocatedResource {format_resource({})} but its "
        f"allocations (preempted ones included) sum to {format_resource(sums)}"
        for path, sums in expected.items()
    )
