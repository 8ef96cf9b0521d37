"""The nodes answer: each node's capacity as YuniKorn can use it, its foreign pods, and
the allocations listed under it (those of the common form read at once, into the
engine's objects too; anything else the careful way, which names what is wrong)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.importers import facts
from dashboard.importers.snapshot.access import (
    _CHECKED_TYPES,
    INT64_MAX,
    INT64_MIN,
    Reader,
    _add_into,
    _drop_zeros,
)
from dashboard.importers.snapshot.applications import _QueueOf
from dashboard.importers.snapshot.memo import KnownNode, PartNode, PollMemo, StaleMemo
from dashboard.importers.snapshot.result import (
    TAG_NAMESPACE,
    TAG_POD,
    TAG_REQUIRED_NODE,
)
from dashboard.importers.snapshot.shim import _pod_key, _PodInfo, _tags
from dashboard.importers.snapshot.statedump import _Sources
from engine.model import Allocation

#: Whether a node's allocations of the common form are read without the careful loop
#: (the tests compare both ways).
_PLAIN_ALLOCATIONS = True

#: Priority texts remembered with their value (a cluster uses a few; bounded for odd input).
_MAX_PRIORITIES = 1024


@dataclass(slots=True)
class _NodesRead:
    """What the nodes answer holds, read."""

    nodes: list[dict[str, Any]]
    allocations: list[dict[str, Any]]
    built: list[Allocation | None]
    """The engine's object of each allocation read the fast way (None for the others),
    handed to its validation: a hundred thousand of them are not read a second time."""
    node_alloc_sum: dict[str, dict[str, int]]
    """Node id -> the sum of its allocations' resources."""
    node_reported: dict[str, dict[str, int]]
    """Node id -> what the scheduler reports allocated on it."""
    seen_keys: dict[str, str]
    """Allocation key -> its node."""
    opted_out: int
    """How many allocations opted out of preemption."""


def _read_nodes(
    src: _Sources,
    apps: Mapping[str, dict[str, Any]],
    leaves: Mapping[str, bool],
    by_uid: Mapping[str, _PodInfo],
    by_name: Mapping[str, _PodInfo],
    queue_of: _QueueOf,
) -> _NodesRead:
    """Every node of the nodes answer (none without one) with its allocations."""
    nodes: list[dict[str, Any]] = []
    allocations: list[dict[str, Any]] = []
    built: list[Allocation | None] = []
    node_alloc_sum: dict[str, dict[str, int]] = {}
    node_reported: dict[str, dict[str, int]] = {}
    seen_keys: dict[str, str] = {}
    shim_pods = bool(by_uid or by_name) or not _PLAIN_ALLOCATIONS
    priorities: dict[str, int] = {}
    plain = _plain_reader(apps, leaves, seen_keys, built, priorities, shim_pods)
    opted_out = 0
    memo, digests = src.memo, src.node_digests
    list_digests = src.list_digests or {}
    if memo is not None and (shim_pods or digests is None):
        memo = None  # the shim's pods may say more of an allocation: nothing kept
    if src.nodes is not None:
        file, base, items = src.nodes
        if memo is not None and (digests is None or len(digests) != len(items)):
            raise StaleMemo(file)
        r = Reader(file)
        seen_nodes: set[str] = set()
        for i, raw in enumerate(items):
            if type(raw) is KnownNode:
                if memo is None:
                    raise StaleMemo(file)
                _take_known(raw, apps, leaves, seen_nodes, seen_keys, file)
                nid = raw.node["id"]
                nodes.append(raw.node)
                node_reported[nid] = raw.reported
                node_alloc_sum[nid] = dict(raw.node_sum)
                allocations.extend(raw.allocations)
                built.extend(raw.built)
                memo.next_known[digests[i]] = raw  # type: ignore[index]  # not None: above
                if raw.list_digest is not None:
                    memo.next_lists[raw.list_digest] = raw
                memo.reused += 1
                continue
            if type(raw) is PartNode:
                if memo is None:
                    raise StaleMemo(file)
                assert digests is not None  # a memo's parse has them (above)
                now_known = _take_part(
                    r, raw, f"{base}[{i}]", apps, leaves, seen_nodes, seen_keys, memo, digests[i]
                )
                nid = now_known.node["id"]
                nodes.append(now_known.node)
                node_reported[nid] = now_known.reported
                node_alloc_sum[nid] = dict(raw.known.node_sum)
                allocations.extend(raw.known.allocations)
                built.extend(raw.known.built)
                if type(items) is list:
                    items[i] = None
                continue
            first = len(allocations)
            careful = 0  # allocations read the careful way
            jp = f"{base}[{i}]"
            raw = r.obj(raw, jp)
            nid = r.key(raw.get("nodeID"), f"{jp}.nodeID")
            if nid in seen_nodes:
                raise r.fail(f"{jp}.nodeID", f"duplicate node {nid!r}")
            seen_nodes.add(nid)
            nodes.append(_node(r, raw, jp, nid))
            node_reported[nid] = _drop_zeros(r.resource(raw.get("allocated"), f"{jp}.allocated"))
            node_alloc_sum[nid] = {}
            node_sum = node_alloc_sum[nid]
            for k, a in enumerate(r.arr(raw.get("allocations") or [], f"{jp}.allocations")):
                fast = plain(a, nid, node_sum)
                if fast is not None:
                    allocations.append(fast)
                    continue
                # anything else (an error to name, or a less common form) the careful way
                alloc = _careful_allocation(
                    r,
                    a,
                    f"{jp}.allocations[{k}]",
                    nid,
                    node_sum,
                    seen_keys,
                    by_uid,
                    by_name,
                    queue_of,
                    priorities,
                )
                if not alloc["allow_preemption"]:
                    opted_out += 1
                allocations.append(alloc)
                built.append(None)  # the engine reads and validates it
                careful += 1
            if memo is not None and not careful:  # every one read the plain way
                memo.decoded += 1
                known = _known(
                    nodes[-1],
                    node_reported[nid],
                    allocations,
                    built,
                    first,
                    node_sum,
                    list_digests.get(i),
                )
                memo.next_known[digests[i]] = known  # type: ignore[index]  # not None
                if known.list_digest is not None:
                    memo.next_lists[known.list_digest] = known
            if type(items) is list:
                # this node's answer is read: let its memory serve the next nodes' rows
                items[i] = None
    return _NodesRead(
        nodes, allocations, built, node_alloc_sum, node_reported, seen_keys, opted_out
    )


def _known(
    node: dict[str, Any],
    reported: dict[str, int],
    allocations: list[dict[str, Any]],
    built: list[Allocation | None],
    first: int,
    node_sum: dict[str, int],
    list_digest: bytes | None = None,
) -> KnownNode:
    """What reading one node gave (its allocations from *first* on), for the memo."""
    made = tuple(a for a in built[first:] if a is not None)
    listed = tuple(allocations[first:])
    apps = tuple(sorted({(a["app"], a["queue"]) for a in listed}))
    return KnownNode(node, reported, listed, made, dict(node_sum), apps, list_digest)


def _take_part(
    r: Reader,
    part: PartNode,
    jp: str,
    apps: Mapping[str, dict[str, Any]],
    leaves: Mapping[str, bool],
    seen_nodes: set[str],
    seen_keys: dict[str, str],
    memo: PollMemo,
    digest: bytes,
) -> KnownNode:
    """A node object whose allocations list is that of a node read before: the rest of
    the object read as a new node is (its list written as ``[]``), the allocations
    taken after the checks of :func:`_take_known`; the node is kept for the next parse.
    :class:`StaleMemo` when the object names another node than the known one, or lists
    its allocations otherwise than as a list."""
    known = part.known
    raw = r.obj(part.rest, jp)
    if raw.get("nodeID") != known.node["id"] or raw.get("allocations") != []:
        raise StaleMemo(jp)
    nid = r.key(raw.get("nodeID"), f"{jp}.nodeID")
    _take_known(known, apps, leaves, seen_nodes, seen_keys, jp)
    node = _node(r, raw, jp, nid)
    reported = _drop_zeros(r.resource(raw.get("allocated"), f"{jp}.allocated"))
    now_known = KnownNode(
        node,
        reported,
        known.allocations,
        known.built,
        known.node_sum,
        known.apps,
        known.list_digest,
    )
    memo.next_known[digest] = now_known
    if known.list_digest is not None:
        memo.next_lists[known.list_digest] = now_known
    memo.partly += 1
    return now_known


def _take_known(
    known: KnownNode,
    apps: Mapping[str, dict[str, Any]],
    leaves: Mapping[str, bool],
    seen_nodes: set[str],
    seen_keys: dict[str, str],
    file: str,
) -> None:
    """Check that a node read by an earlier parse fits this answer as it did that one
    (its id and keys not seen yet, each application in the same leaf queue), and note
    its id and keys; else :class:`StaleMemo`."""
    nid = known.node["id"]
    if nid in seen_nodes:
        raise StaleMemo(file)
    seen_nodes.add(nid)
    for app_id, queue in known.apps:
        app = apps.get(app_id)
        if app is None or app["queue"] != queue or leaves.get(queue) is not True:
            raise StaleMemo(file)
    keys = dict.fromkeys([a["key"] for a in known.allocations], nid)
    if not seen_keys.keys().isdisjoint(keys):
        raise StaleMemo(file)
    seen_keys.update(keys)


def _node(r: Reader, raw: dict[str, Any], jp: str, nid: str) -> dict[str, Any]:
    """One node of the scenario: its capacity less what foreign pods occupy."""
    capacity = r.resource(raw.get("capacity"), f"{jp}.capacity")
    occupied = r.resource(raw.get("occupied"), f"{jp}.occupied")
    foreign: list[dict[str, Any]] = []
    foreign_sum: dict[str, int] = {}
    for k, fa in enumerate(r.arr(raw.get("foreignAllocations") or [], f"{jp}.foreignAllocations")):
        fa = r.obj(fa, f"{jp}.foreignAllocations[{k}]")
        held = r.resource(fa.get("resource"), f"{jp}.foreignAllocations[{k}].resource")
        _add_into(foreign_sum, held)
        foreign.append(facts.foreign_pod(fa, held))
    if not occupied:
        occupied = foreign_sum
    node: dict[str, Any] = {
        "id": nid,
        "capacity": {t: max(q - occupied.get(t, 0), 0) for t, q in capacity.items()},
        "schedulable": r.flag(raw, "schedulable", jp, default=True),
        # foreign pods (other schedulers) hold `occupied`; the engine sees only
        # YuniKorn tasks, so its capacity is what YuniKorn reports minus that
        "reported_capacity": capacity,
        "occupied": _drop_zeros(occupied),
        "foreign_pods": sorted(foreign, key=lambda f: str(f["key"])),
    }
    return node


def _plain_reader(
    apps: Mapping[str, dict[str, Any]],
    leaves: Mapping[str, bool],
    seen_keys: dict[str, str],
    built: list[Allocation | None],
    priorities: Mapping[str, int],
    shim_pods: bool,
) -> Callable[[object, str, dict[str, int]], dict[str, Any] | None]:
    """The reader of a node's allocations of the common form (*shim_pods*: never, as the
    shim's pods may say more of them), recording each in *seen_keys* and its engine
    object in *built*; *priorities* are the priority texts the careful way read."""
    same_resources: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    checked_types = _CHECKED_TYPES

    def plain(a: object, nid: str, node_sum: dict[str, int]) -> dict[str, Any] | None:
        """One allocation of a node's answer as :func:`_careful_allocation` reads it, when
        it has the common form (every value of the expected type, nothing to warn about
        or refuse); else None, and the careful way reads it (and names what is wrong)."""
        if type(a) is not dict or shim_pods:
            return None
        get = a.get
        key = get("allocationKey")
        if type(key) is not str or not key or key in seen_keys:
            return None
        on = get("nodeId")
        app_id = get("applicationId")
        tags = get("allocationTags")
        res = get("resource")
        if (
            (on is not None and on != nid)
            or type(app_id) is not str
            or type(tags) is not dict
            or type(res) is not dict
        ):
            return None
        app = apps.get(app_id)
        if app is None or leaves.get(app["queue"]) is not True:
            return None
        resources: dict[str, int] = {}
        for t, q in res.items():
            if type(q) is not int or t not in checked_types or not 0 <= q <= INT64_MAX:
                return None
            if q:
                resources[t] = q
        for v in tags.values():
            if type(v) is not str:
                return None
        # equal maps kept once (most pods ask alike; nothing changes an allocation's map)
        resources = same_resources.setdefault(tuple(resources.items()), resources)
        priority = get("priority")
        if type(priority) is str:
            prio = priorities.get(priority)
            if prio is None:
                return None
        elif priority is None:
            prio = 0
        else:
            return None
        originator = get("originator")
        preempted = get("preempted")
        placeholder = get("placeholder")
        used = get("placeholderUsed")
        if (
            (originator is not None and type(originator) is not bool)
            or (preempted is not None and type(preempted) is not bool)
            or (placeholder is not None and type(placeholder) is not bool)
            or (used is not None and type(used) is not bool)
        ):
            return None
        created = get("requestTime") if "requestTime" in a else get("allocationTime")
        if created is None:
            when = 0.0
        elif type(created) is int and INT64_MIN <= created <= INT64_MAX:
            when = created / 1e9 or 0.0
        else:
            return None
        ns, pod_name = tags.get(TAG_NAMESPACE), tags.get(TAG_POD)
        seen_keys[key] = nid
        for t, q in resources.items():
            node_sum[t] = node_sum.get(t, 0) + q
        queue = app["queue"]
        required = bool(tags.get(TAG_REQUIRED_NODE))
        alloc: dict[str, Any] = {
            "key": key,
            "app": app_id,
            "queue": queue,
            "node": nid,
            "resources": resources,
            "priority": prio,
            "originator": originator is True,
            "allow_preemption": True,
            "created": when,
            "required_node": required,
            "preempted": preempted is True,
        }
        # the engine's Allocation of the dict above (every value of its type and range)
        built.append(
            Allocation(
                key,
                queue,
                nid,
                resources,
                app_id,
                prio,
                originator is True,
                True,
                when,
                required,
                preempted is True,
            )
        )
        if ns and pod_name:
            alloc["pod"] = f"{ns}/{pod_name}"
        if placeholder is True:
            alloc["placeholder"] = True
        if used is True:
            alloc["placeholder_used"] = True
        group = get("taskGroupName")
        if type(group) is str and group:
            alloc["task_group"] = group
        return alloc

    return plain


def _careful_allocation(
    r: Reader,
    a: object,
    ajp: str,
    nid: str,
    node_sum: dict[str, int],
    seen_keys: dict[str, str],
    by_uid: Mapping[str, _PodInfo],
    by_name: Mapping[str, _PodInfo],
    queue_of: _QueueOf,
    priorities: dict[str, int],
) -> dict[str, Any]:
    """One allocation of node *nid*'s answer read field by field: anything wrong named,
    the shim's allow-preemption honoured, a priority text remembered for the fast way."""
    a = r.obj(a, ajp)
    key = r.key(a.get("allocationKey"), f"{ajp}.allocationKey")
    if key in seen_keys:
        raise r.fail(
            f"{ajp}.allocationKey",
            f"duplicate allocation {key!r} (also on {seen_keys[key]})",
        )
    seen_keys[key] = nid
    on = r.string(a.get("nodeId"), f"{ajp}.nodeId", required=False) or nid
    if on != nid:
        raise r.fail(f"{ajp}.nodeId", f"allocation listed under node {nid!r} says node {on!r}")
    app_id = r.string(a.get("applicationId"), f"{ajp}.applicationId", required=False)
    tags = _tags(r, a.get("allocationTags"), f"{ajp}.allocationTags")
    resources = r.resource(a.get("resource"), f"{ajp}.resource")
    _add_into(node_sum, resources)
    pod = _pod_key(tags)
    shim = by_uid.get(key) or (by_name.get(pod) if pod else None)
    allow = True
    if shim is not None and shim.allow_preemption is not None:
        allow = shim.allow_preemption
    created = a.get("requestTime", a.get("allocationTime"))
    queue = queue_of(r, ajp, app_id, tags, "allocation")
    raw_priority = a.get("priority")
    priority = r.priority(raw_priority, f"{ajp}.priority")
    if type(raw_priority) is str and len(priorities) < _MAX_PRIORITIES:
        priorities[raw_priority] = priority  # the next ones read the fast way
    alloc: dict[str, Any] = {
        "key": key,
        "app": app_id,
        "queue": queue,
        "node": nid,
        "resources": _drop_zeros(resources),
        "priority": priority,
        "originator": r.flag(a, "originator", ajp),
        "allow_preemption": allow,
        "created": r.time_ns(created, f"{ajp}.requestTime") or 0.0,
        "required_node": bool(tags.get(TAG_REQUIRED_NODE)),
        "preempted": r.flag(a, "preempted", ajp),
    }
    if pod:
        alloc["pod"] = pod
    r.flag(a, "placeholder", ajp)  # checked: omitempty booleans are true or absent
    r.flag(a, "placeholderUsed", ajp)
    alloc.update(facts.allocation_facts(a))
    return alloc
