"""Cross-checks against the scheduler's own totals, and the engine's validation of the result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.quantities import (
    format_resource,
)
from dashboard.importers.snapshot.access import _add_into, _drop_zeros, shared_map_counts
from dashboard.importers.snapshot.statedump import _Sources
from engine.errors import ScenarioError
from engine.model import Allocation, Cluster
from engine.scenario import parse_cluster


def _cross_check(
    src: _Sources,
    usage: dict[str, dict[str, Any]],
    allocations: list[dict[str, Any]],
    node_reported: dict[str, dict[str, int]],
    node_sums: dict[str, dict[str, int]],
    apps: dict[str, dict[str, Any]],
    app_sums: dict[str, dict[str, int]],
) -> None:
    """Warn where the scheduler's sums disagree with the allocations we hold."""
    assert src.tree is not None
    tree_file = src.tree[0]
    # summed per queue first, then each queue's sums into its ancestors (a cluster has
    # far fewer queues than allocations)
    own: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for (queue, preempted), res, count in shared_map_counts(
        ((a["queue"], bool(a["preempted"])), a["resources"]) for a in allocations
    ):
        queue_sums = own.get(queue)
        if queue_sums is None:
            queue_sums = own[queue] = ({}, {})
        for into in (queue_sums[0], queue_sums[1]) if preempted else (queue_sums[0],):
            for t, q in res.items():
                into[t] = into.get(t, 0) + q * count
    allocated: dict[str, dict[str, int]] = {p: {} for p in usage}
    preempting: dict[str, dict[str, int]] = {p: {} for p in usage}
    for queue, (queue_allocated, queue_preempting) in own.items():
        parts = queue.split(".")
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            _add_into(allocated[path], queue_allocated)
            _add_into(preempting[path], queue_preempting)
    for path in sorted(usage):
        u = usage[path]
        mine_a, mine_p = _drop_zeros(allocated[path]), _drop_zeros(preempting[path])
        if mine_a != u["allocated"]:
            src.warnings.append(
                f"{tree_file}: {path} allocatedResource {format_resource(u['allocated'])} but its "
                f"allocations (preempted ones included) sum to {format_resource(mine_a)}"
            )
        if mine_p != u["preempting"]:
            src.warnings.append(
                f"{tree_file}: {path} preemptingResource {format_resource(u['preempting'])} but "
                f"its preempted allocations sum to {format_resource(mine_p)}"
            )
    assert src.nodes is not None
    for nid, reported in node_reported.items():
        mine = _drop_zeros(node_sums.get(nid, {}))
        if reported != mine:
            src.warnings.append(
                f"{src.nodes[0]}: node {nid} allocated {format_resource(reported)} but its "
                f"allocations sum to {format_resource(mine)}"
            )
    for app_id, sums in app_sums.items():
        app = apps.get(app_id)
        if app is not None and app["used"] != _drop_zeros(sums):
            src.warnings.append(
                f"application {app_id}: usedResource {format_resource(app['used'])} but its "
                f"allocations sum to {format_resource(_drop_zeros(sums))}"
            )


def _validate(
    scenario: dict[str, Any], src: _Sources, built: Sequence[Allocation | None] | None = None
) -> Cluster:
    """The engine's own validation: every snapshot must be a scenario ``python -m engine`` reads.

    *built*: the engine's allocations the importer made while reading the common form
    (:func:`engine.scenario.parse_cluster`'s ``built_allocations``).
    """
    try:
        return parse_cluster(scenario, built_allocations=built)
    except ScenarioError as exc:
        files = ", ".join(src.files) or "snapshot"
        raise ImportFailure(
            f"the imported cluster is not a valid scenario: {exc.message}",
            f"{files}: {exc.field}",
        ) from None
