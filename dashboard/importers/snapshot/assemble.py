"""YuniKorn's answers -> one scenario cluster: nodes, allocations, asks, applications.

Each part is read by the module named after what it reads (``sources``, ``queues``,
``shim``, ``applications``, ``nodes``, ``asks``, ``partition``), then cross-checked
against the scheduler's own sums (``checks``) and validated by the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dashboard.importers.snapshot.applications import _applications, _queue_finder
from dashboard.importers.snapshot.asks import _read_application_lists
from dashboard.importers.snapshot.checks import _cross_check, _validate
from dashboard.importers.snapshot.memo import PollMemo
from dashboard.importers.snapshot.nodes import _read_nodes
from dashboard.importers.snapshot.partition import _cluster_id, _partition_flag
from dashboard.importers.snapshot.queues import _queue_tree
from dashboard.importers.snapshot.result import SnapshotImport
from dashboard.importers.snapshot.shim import _shim_pods
from dashboard.importers.snapshot.sources import _yunikorn_sources
from dashboard.importers.snapshot.statedump import _Sources

if TYPE_CHECKING:
    from dashboard.importers.events import EventsImport


def _from_yunikorn(
    docs: dict[str, list[tuple[str, Any]]],
    wanted: str | None,
    gangless: set[int] | None = None,
    memo: PollMemo | None = None,
    node_digests: list[bytes] | None = None,
    list_digests: dict[int, bytes] | None = None,
) -> SnapshotImport:
    """The import of YuniKorn's answers (*gangless*: see
    :func:`~dashboard.importers.snapshot.applications._drop_unread`; *memo* and the
    digests of the nodes answer's objects and allocations lists: see
    :mod:`dashboard.importers.snapshot.memo`)."""
    src, part = _yunikorn_sources(docs, wanted, gangless)
    if src.kind == "rest":
        src.memo, src.node_digests, src.list_digests = memo, node_digests, list_digests
    return _assemble(src, part)


def _assemble(src: _Sources, partition: str) -> SnapshotImport:
    """The import of *partition* from *src*: the queue tree, the shim's pods, the
    applications, the nodes with their allocations, what the applications list (their
    allocations and the pending asks), the cross-checks, the partition's flag, and the
    engine's validation of the scenario, in that order (warnings in that order too)."""
    tree, usage, leaves = _queue_tree(src)
    warnings = src.warnings
    by_uid, by_name = _shim_pods(src)
    apps, app_raws = _applications(src, partition)
    queue_of = _queue_finder(apps, leaves, warnings)
    read = _read_nodes(src, apps, leaves, by_uid, by_name, queue_of)
    allocations = read.allocations
    node_ids = {n["id"] for n in read.nodes}
    # pending asks, and allocations the applications list but the nodes do not
    lists = _read_application_lists(
        src, app_raws, read.seen_keys, node_ids, by_uid, by_name, queue_of, warnings
    )

    # cross-checks against the scheduler's own sums
    if src.nodes is not None:
        _cross_check(
            src,
            usage,
            allocations,
            read.node_reported,
            read.node_alloc_sum,
            apps,
            lists.app_alloc_sum,
        )

    flag = _partition_flag(src, partition)
    scenario: dict[str, Any] = {}
    if src.captured_at is not None:
        scenario["now"] = src.captured_at
    scenario["partition"] = {"quota_preemption_enabled": flag, "miss": 0.0}
    scenario["queues"] = tree
    scenario["nodes"] = read.nodes
    scenario["allocations"] = allocations
    scenario["cluster_id"] = src.cluster_id or _cluster_id(src)
    scenario["captured_at"] = src.captured_at
    cluster = _validate(scenario, src, read.built)
    if read.opted_out:
        warnings.append(
            f"{read.opted_out} allocations opted out of preemption "
            "(yunikorn.apache.org/allow-preemption on the pod or its PriorityClass)"
        )
    return SnapshotImport(
        kind=src.kind,
        partition=partition,
        captured_at=src.captured_at,
        scenario=scenario,
        asks=tuple(sorted(lists.asks, key=lambda a: a["key"])),
        applications=tuple(apps[k] for k in sorted(apps)),
        queue_usage=usage,
        warnings=tuple(warnings),
        files=tuple(src.files),
        cluster_id=src.cluster_id or _cluster_id(src),
        events=src.events,
        observed=_observed(src, allocations),
        cluster=cluster,
        # the config the scheduler ran, from a REST folder's config.json or a state dump
        config=src.config,
    )


def _observed(src: _Sources, allocations: list[dict[str, Any]]) -> EventsImport | None:
    """The events batch of a REST folder, its victims named from the allocations."""
    if src.events is None:
        return None
    from dashboard.importers.events import parse_events  # events imports this package

    by_key = {a["key"]: a for a in allocations}
    return parse_events(src.events, filename=src.events_file, allocations=by_key)
