"""What the applications answers list of each application: its allocations, checked
against the nodes answer and summed per application (for the cross-check), and its
pending requests, the asks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dashboard.importers.snapshot.access import (
    _CHECKED_TYPES,
    INT64_MAX,
    Reader,
    _add_into,
    _drop_zeros,
)
from dashboard.importers.snapshot.applications import _QueueOf, _usual_entry
from dashboard.importers.snapshot.asklog import scheduler_view
from dashboard.importers.snapshot.result import TAG_REQUIRED_NODE
from dashboard.importers.snapshot.shim import _pod_key, _PodInfo, _tags
from dashboard.importers.snapshot.statedump import _Sources


def _read_application_lists(
    src: _Sources,
    app_raws: Sequence[tuple[Reader, str, dict[str, Any]]],
    seen_keys: Mapping[str, str],
    node_ids: set[str],
    by_uid: Mapping[str, _PodInfo],
    by_name: Mapping[str, _PodInfo],
    queue_of: _QueueOf,
    warnings: list[str],
) -> _ApplicationLists:
    """The allocations and the asks of every application, one application at a time
    (its answer emptied once read); *seen_keys*: the allocations of the nodes answer."""
    lists = _ApplicationLists(
        seen_keys, node_ids, src.nodes is not None, by_uid, by_name, queue_of, warnings
    )
    for r, jp, raw in app_raws:
        app_id = raw["applicationID"]
        lists.allocations(r, jp, raw, app_id)
        lists.requests(r, jp, raw, app_id)
        raw.clear()  # this application's answer is read (its allocations are the bulk)
    missing_nodes = lists.missing_nodes
    if missing_nodes:
        warnings.append(
            f"no nodes list (partition_nodes.json): the {len(missing_nodes)} allocations of the "
            "applications cannot be placed, so the snapshot holds no allocations and no usage"
        )
    return lists


@dataclass(slots=True)
class _ApplicationLists:
    """The allocations and asks of the applications read so far."""

    seen_keys: Mapping[str, str]
    """Allocation key -> its node, for every allocation of the nodes answer."""
    node_ids: set[str]
    nodes_listed: bool
    """Whether there is a nodes answer (without one, no allocation can be placed)."""
    by_uid: Mapping[str, _PodInfo]
    by_name: Mapping[str, _PodInfo]
    queue_of: _QueueOf
    warnings: list[str]
    asks: list[dict[str, Any]] = field(default_factory=list)
    ask_keys: set[str] = field(default_factory=set)
    app_alloc_sum: dict[str, dict[str, int]] = field(default_factory=dict)
    """Application id -> the sum of the allocations it lists."""
    app_alloc_keys: set[str] = field(default_factory=set)
    missing_nodes: list[str] = field(default_factory=list)
    """The allocations listed while there is no nodes answer."""
    plain_maps: dict[int, dict[str, int]] = field(default_factory=dict)
    """The resource maps found of the common form, by identity (equal maps of the answer
    are one object: checked once); each held here, so that no other takes its id."""

    def allocations(self, r: Reader, jp: str, raw: dict[str, Any], app_id: str) -> None:
        """The allocations application *raw* lists, summed: those of the common form
        listed under their node already are read at once, the others the careful way."""
        seen_keys, node_ids, nodes_listed = self.seen_keys, self.node_ids, self.nodes_listed
        app_alloc_sum, app_alloc_keys = self.app_alloc_sum, self.app_alloc_keys
        missing_nodes, plain_maps, warnings = self.missing_nodes, self.plain_maps, self.warnings
        checked_types = _CHECKED_TYPES
        app_sum: dict[str, int] | None = None
        for k, a in enumerate(r.arr(raw.get("allocations") or [], f"{jp}.allocations")):
            if nodes_listed and (type(a) is tuple or type(a) is dict):
                # the common form, read at once: listed under its node already
                if isinstance(a, tuple):  # a usual entry, so kept by _drop_unread
                    listed, said, res = a
                else:
                    listed = a.get("allocationKey")
                    said = a.get("nodeId")
                    res = a.get("resource")
                if (
                    type(listed) is str
                    and listed in seen_keys
                    and listed not in app_alloc_keys
                    and (said is None or type(said) is str)
                    and type(res) is dict
                    and (
                        plain_maps.get(id(res)) is res
                        or (
                            all(
                                type(q) is int and t in checked_types and 0 <= q <= INT64_MAX
                                for t, q in res.items()
                            )
                            and plain_maps.setdefault(id(res), res) is res
                        )
                    )
                ):
                    app_alloc_keys.add(listed)
                    if app_sum is None:
                        app_sum = app_alloc_sum.setdefault(app_id, {})
                    for t, q in res.items():
                        app_sum[t] = app_sum.get(t, 0) + q
                    continue
            if type(a) is tuple:
                a = _usual_entry(a)
            ajp = f"{jp}.allocations[{k}]"
            a = r.obj(a, ajp)
            key = r.key(a.get("allocationKey"), f"{ajp}.allocationKey")
            on = r.string(a.get("nodeId"), f"{ajp}.nodeId", required=False)
            res = r.resource(a.get("resource"), f"{ajp}.resource")
            if key in app_alloc_keys:
                continue  # the same application listed by two endpoints
            app_alloc_keys.add(key)
            if not nodes_listed:
                missing_nodes.append(key)
                continue
            if key not in seen_keys:
                if on and on not in node_ids:
                    raise r.fail(f"{ajp}.nodeId", f"allocation {key!r} on unknown node {on!r}")
                warnings.append(
                    f"{r.file}: {ajp}: allocation {key!r} of {app_id} is not on any node in the "
                    "nodes list (the files were not taken at the same moment?)"
                )
            _add_into(app_alloc_sum.setdefault(app_id, {}), res)

    def requests(self, r: Reader, jp: str, raw: dict[str, Any], app_id: str) -> None:
        """The pending requests application *raw* lists, as asks (a request that is also
        a running allocation is left out, with a warning)."""
        asks, ask_keys, seen_keys = self.asks, self.ask_keys, self.seen_keys
        by_uid, by_name, queue_of = self.by_uid, self.by_name, self.queue_of
        warnings = self.warnings
        app_state = raw.get("applicationState")
        for k, q in enumerate(r.arr(raw.get("requests") or [], f"{jp}.requests")):
            qjp = f"{jp}.requests[{k}]"
            q = r.obj(q, qjp)
            key = r.key(q.get("allocationKey"), f"{qjp}.allocationKey")
            if key in ask_keys:
                continue  # the same application listed by two endpoints
            ask_keys.add(key)
            if key in seen_keys:
                warnings.append(f"{r.file}: {qjp}: ask {key!r} is also a running allocation")
                continue
            tags = _tags(r, q.get("allocationTags"), f"{qjp}.allocationTags")
            pod = _pod_key(tags)
            shim = by_uid.get(key) or (by_name.get(pod) if pod else None)
            ask: dict[str, Any] = {
                "key": key,
                "app": app_id,
                "queue": queue_of(r, qjp, app_id, tags, "ask"),
                "resources": _drop_zeros(r.resource(q.get("resource"), f"{qjp}.resource")),
                "priority": r.priority(q.get("priority"), f"{qjp}.priority"),
                "allow_preempt_other": True
                if shim is None or shim.allow_preempt_other is None
                else shim.allow_preempt_other,
                "created": r.time_ns(q.get("requestTime"), f"{qjp}.requestTime") or 0.0,
                "triggered_preemption": r.flag(q, "triggeredPreemption", qjp),
                "required_node": r.string(
                    q.get("requiredNodeId"), f"{qjp}.requiredNodeId", required=False
                )
                or tags.get(TAG_REQUIRED_NODE)
                or None,
                "placeholder": r.flag(q, "placeholder", qjp),
                "application_state": app_state,
                **scheduler_view(r, q, qjp),
            }
            if pod:
                ask["pod"] = pod
            asks.append(ask)
