"""YuniKorn's answers -> one scenario cluster: nodes, allocations, asks, applications."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dashboard.importers import facts
from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.access import _CHECKED_TYPES, _add_into, _drop_zeros, _Reader
from dashboard.importers.snapshot.asklog import scheduler_view
from dashboard.importers.snapshot.checks import _cross_check, _validate
from dashboard.importers.snapshot.queues import _queue_tree
from dashboard.importers.snapshot.result import (
    GO_ZERO_TIME_MS,
    INT64_MAX,
    INT64_MIN,
    TAG_NAMESPACE,
    TAG_POD,
    TAG_QUEUE,
    TAG_REQUIRED_NODE,
    SnapshotImport,
)
from dashboard.importers.snapshot.shim import _pod_key, _shim_pods, _tags
from dashboard.importers.snapshot.statedump import _Sources, _statedump_sources
from engine.model import Allocation

if TYPE_CHECKING:
    from dashboard.importers.events import EventsImport


def _from_yunikorn(
    docs: dict[str, list[tuple[str, Any]]], wanted: str | None, gangless: set[int] | None = None
) -> SnapshotImport:
    """The import of YuniKorn's answers (*gangless*: see :func:`_drop_unread`)."""
    if len(docs["statedump"]) > 1:
        raise ImportFailure(
            "more than one state dump: " + ", ".join(n for n, _ in docs["statedump"])
        )
    if docs["statedump"]:
        name, doc = docs["statedump"][0]
        src, part = _statedump_sources(name, doc, wanted)
        # the dump holds no events: the scheduler's events batch beside it is still read
        for n, d in docs["events"]:
            src.events = d
            src.events_file = n
            src.files.append(n)
        used = ["statedump", "events"]
        if src.config is None and docs["config"]:  # a dump without its config: the file's
            n, d = docs["config"][0]
            src.config = (n, "", d)
            src.files.append(n)
            used.append("config")
        ignored = [n for s, items in docs.items() if s not in used for n, _ in items]
        if ignored:
            src.warnings.append(
                "the state dump is used; these files were ignored: " + ", ".join(ignored)
            )
    else:
        src = _Sources(kind="rest")
        if not docs["queues"]:
            single = [n for n, _ in docs["queue"]]
            hint = (
                f" ({', '.join(single)} holds a single queue without its subtree)" if single else ""
            )
            raise ImportFailure(
                "a REST snapshot needs the whole queue tree: GET "
                "/ws/v1/partition/{partition}/queues (partition_queues.json), or a state dump"
                + hint
            )
        if len(docs["queues"]) > 1:
            raise ImportFailure(
                "more than one queue tree: " + ", ".join(n for n, _ in docs["queues"])
            )
        qname, qdoc = docs["queues"][0]
        src.tree = (qname, "", qdoc)
        part = (
            _Reader(qname).string(qdoc.get("partition"), "partition", required=False) or "default"
        )
        if wanted is not None and wanted != part:
            raise ImportFailure(f"the queue tree is for partition {part!r}, not {wanted!r}", qname)
        src.files.append(qname)
        if len(docs["nodes"]) > 1:
            raise ImportFailure(
                "more than one nodes list: " + ", ".join(n for n, _ in docs["nodes"])
            )
        if docs["nodes"]:
            src.nodes = (docs["nodes"][0][0], "", docs["nodes"][0][1])
            src.files.append(docs["nodes"][0][0])
        for n, d in docs["applications"]:
            src.apps.append((n, "", d))
            src.files.append(n)
        src.gangless = gangless or set()
        if docs["partitions"]:
            n, d = docs["partitions"][0]
            src.partitions = (n, "", d)
            src.files.append(n)
        if docs["config"]:
            n, d = docs["config"][0]
            src.config = (n, "", d)
            src.files.append(n)
        for n, d in docs["events"]:
            src.events = d
            src.events_file = n
            src.files.append(n)
        for n, _ in docs["queue"] + docs["placementrules"] + docs["empty"]:
            src.files.append(n)
        for n, _ in docs["empty"]:
            src.warnings.append(f"{n}: an empty list; nothing taken from it")
        src.warnings.append(
            "REST files carry no allow-preemption flag (only the state dump's shim cache "
            "does): every allocation is imported as allowing preemption"
        )
    return _assemble(src, part)


#: Whether a node's allocations of the common form are read without the careful loop
#: (the tests compare both ways).
_PLAIN_ALLOCATIONS = True

#: Priority texts remembered with their value (a cluster uses a few; bounded for odd input).
_MAX_PRIORITIES = 1024

#: What is read of an application's allocations (the nodes answer lists them in full).
_APP_ALLOCATION_FIELDS = ("allocationKey", "nodeId", "resource", "taskGroupName", "placeholder")


def _drop_unread(items: object) -> set[int]:
    """Keep of each application's allocations only what the import reads.

    An applications answer repeats every allocation of the nodes answer with its tags
    and times; dropping those as soon as the answer is decoded frees half its memory
    for the answers decoded after it, and equal resources and node names are kept
    once. Nothing else is checked here: a malformed entry is left as it is, for the
    import to name.

    The usual entry of an application without gang facts (an object with a key, a
    node and a resource, and neither a task group nor a placeholder field) is kept as
    the tuple ``(key, node, resource)``: a third of a dict's memory, at the parse's
    peak (the nodes answer is decoded beside these). The readers take it as the
    object ``{"allocationKey": key, "nodeId": node, "resource": resource}``. An
    application with gang facts keeps objects only.

    Returns the ids of the applications whose allocations are all objects and none
    names a task group or a placeholder: their gang facts are not looked for again.
    """
    gangless: set[int] = set()
    if type(items) is not list:
        return gangless
    # the same resource (most pods ask alike) kept once: its entries are only read
    resources: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    node_ids: dict[str, str] = {}
    for app in items:
        allocations = app.get("allocations") if type(app) is dict else None
        if type(allocations) is not list:
            continue
        gang = False
        for k, a in enumerate(allocations):
            if type(a) is not dict:
                gang = True  # looked at again, and named
                continue
            if "allocationKey" in a and "nodeId" in a and "resource" in a:
                # the usual entry, written out (the fields in _APP_ALLOCATION_FIELDS order)
                res = a["resource"]
                node = a["nodeId"]
                if type(res) is dict:
                    for q in res.values():
                        if type(q) is not int:
                            break
                    else:
                        res = resources.setdefault(tuple(res.items()), res)
                if type(node) is str:
                    node = node_ids.setdefault(node, node)
                if "taskGroupName" not in a and "placeholder" not in a:
                    allocations[k] = (a["allocationKey"], node, res)
                    continue
                kept = {"allocationKey": a["allocationKey"], "nodeId": node, "resource": res}
                if "taskGroupName" in a:
                    kept["taskGroupName"] = a["taskGroupName"]
                if "placeholder" in a:
                    kept["placeholder"] = a["placeholder"]
                gang = True
                allocations[k] = kept
                continue
            kept = {f: a[f] for f in _APP_ALLOCATION_FIELDS if f in a}
            if "taskGroupName" in kept or "placeholder" in kept:
                gang = True
            res = kept.get("resource")
            if type(res) is dict and all(type(q) is int for q in res.values()):
                kept["resource"] = resources.setdefault(tuple(res.items()), res)
            node = kept.get("nodeId")
            if type(node) is str:
                kept["nodeId"] = node_ids.setdefault(node, node)
            allocations[k] = kept
        if not gang:
            gangless.add(id(app))
            continue
        # its gang facts are read from every entry: objects only
        for k, a in enumerate(allocations):
            if type(a) is tuple:
                allocations[k] = _usual_entry(a)
    return gangless


def _usual_entry(kept: tuple[object, object, object]) -> dict[str, object]:
    """The object a usual entry kept as a tuple by :func:`_drop_unread` stands for."""
    return {"allocationKey": kept[0], "nodeId": kept[1], "resource": kept[2]}


def _app_history_and_gang(
    r: _Reader, raw: dict[str, Any], jp: str, gangless: bool = False
) -> dict[str, Any]:
    """An application's state log and gang scheduling data, where the answer has them.

    ``state_log``: ``[{time, state}]`` (seconds); ``placeholders``: one entry per
    task group of ``placeholderData``; ``task_groups``: allocation or ask key ->
    its task group; ``placeholder_keys``: the keys of placeholder allocations.
    *gangless*: its allocations are known to be objects without a task group or a
    placeholder flag (:func:`_drop_unread`); only its requests are looked at.
    """
    out: dict[str, Any] = {}
    log = []
    for k, item in enumerate(r.arr(raw.get("stateLog") or [], f"{jp}.stateLog")):
        entry = r.obj(item, f"{jp}.stateLog[{k}]")
        log.append(
            {
                "time": r.time_ns(entry.get("time"), f"{jp}.stateLog[{k}].time"),
                "state": r.string(
                    entry.get("applicationState"),
                    f"{jp}.stateLog[{k}].applicationState",
                    required=False,
                ),
            }
        )
    if log:
        out["state_log"] = log
    placeholders = []
    for k, item in enumerate(r.arr(raw.get("placeholderData") or [], f"{jp}.placeholderData")):
        p = r.obj(item, f"{jp}.placeholderData[{k}]")
        base = f"{jp}.placeholderData[{k}]"
        placeholders.append(
            {
                "task_group": r.string(p.get("taskGroupName"), f"{base}.taskGroupName"),
                "count": r.integer(p.get("count") or 0, f"{base}.count", 0),
                "min_resource": _drop_zeros(
                    r.resource(p.get("minResource"), f"{base}.minResource")
                ),
                "replaced": r.integer(p.get("replaced") or 0, f"{base}.replaced", 0),
                "timed_out": r.integer(p.get("timedout") or 0, f"{base}.timedout", 0),
            }
        )
    if placeholders:
        out["placeholders"] = placeholders
    groups: dict[str, str] = {}
    placeholder_keys: list[str] = []
    for field in ("requests",) if gangless else ("allocations", "requests"):
        for k, item in enumerate(r.arr(raw.get(field) or [], f"{jp}.{field}")):
            if type(item) is tuple:
                continue  # a usual entry (see _drop_unread): no task group, no placeholder
            a = item if type(item) is dict else r.obj(item, f"{jp}.{field}[{k}]")
            key = a.get("allocationKey")
            if not isinstance(key, str) or not key:
                continue
            group = a.get("taskGroupName")
            if isinstance(group, str) and group:
                groups[key] = group
            if a.get("placeholder") is True:
                placeholder_keys.append(key)
    if groups:
        out["task_groups"] = groups
    if placeholder_keys:
        out["placeholder_keys"] = placeholder_keys
    return out


def _applications(
    src: _Sources, partition: str
) -> tuple[dict[str, dict[str, Any]], list[tuple[_Reader, str, dict[str, Any]]]]:
    """Applications by id (merged over files) and their raw objects with locations."""
    apps: dict[str, dict[str, Any]] = {}
    raws: list[tuple[_Reader, str, dict[str, Any]]] = []
    for file, base, items in src.apps:
        r = _Reader(file)
        for i, raw in enumerate(items):
            jp = f"{base}[{i}]"
            raw = r.obj(raw, jp)
            app_id = r.key(raw.get("applicationID"), f"{jp}.applicationID")
            app_part = r.string(raw.get("partition"), f"{jp}.partition", required=False)
            if app_part and app_part != partition:
                continue
            queue = r.key(raw.get("queueName"), f"{jp}.queueName")
            start = raw.get("startTime")
            start_s: float | None = None
            if start is not None:
                ms = r.integer(start, f"{jp}.startTime")
                start_s = None if ms == GO_ZERO_TIME_MS or ms <= 0 else ms / 1000.0
            info = {
                "id": app_id,
                "queue": queue,
                "partition": app_part or partition,
                "state": r.string(
                    raw.get("applicationState"), f"{jp}.applicationState", required=False
                ),
                "user": r.string(raw.get("user"), f"{jp}.user", required=False),
                "groups": [
                    r.string(g, f"{jp}.groups[{k}]")
                    for k, g in enumerate(r.arr(raw.get("groups") or [], f"{jp}.groups"))
                ],
                "submission_time": r.time_ns(raw.get("submissionTime"), f"{jp}.submissionTime"),
                "start_time": start_s,
                "finished_time": r.time_ns(raw.get("finishedTime"), f"{jp}.finishedTime"),
                "used": _drop_zeros(r.resource(raw.get("usedResource"), f"{jp}.usedResource")),
                "pending": _drop_zeros(
                    r.resource(raw.get("pendingResource"), f"{jp}.pendingResource")
                ),
                "max_used": _drop_zeros(
                    r.resource(raw.get("maxUsedResource"), f"{jp}.maxUsedResource")
                ),
                "allocations": len(r.arr(raw.get("allocations") or [], f"{jp}.allocations")),
                "requests": len(r.arr(raw.get("requests") or [], f"{jp}.requests")),
                **_app_history_and_gang(r, raw, jp, id(raw) in src.gangless),
            }
            prev = apps.get(app_id)
            if prev is not None and prev["queue"] != queue:
                raise r.fail(
                    f"{jp}.queueName", f"application {app_id} is in {prev['queue']} in another file"
                )
            if prev is None or (
                info["state"] not in ("Completed", "Failed", "Rejected", "Expired")
            ):
                apps[app_id] = info
            raws.append((r, jp, raw))
    return apps, raws


def _assemble(src: _Sources, partition: str) -> SnapshotImport:
    tree, usage, leaves = _queue_tree(src)
    warnings = src.warnings
    by_uid, by_name = _shim_pods(src)
    apps, app_raws = _applications(src, partition)

    def queue_of(r: _Reader, jp: str, app_id: str, tags: Mapping[str, str], what: str) -> str:
        app = apps.get(app_id)
        queue = app["queue"] if app is not None else None
        if queue is None:
            label = tags.get(TAG_QUEUE)
            if label:
                queue = label.lower()
                warnings.append(
                    f"{r.file}: {jp}: {what} of application {app_id!r}: queue taken from the pod "
                    f"label ({queue}); no application data for it"
                )
        if queue is None:
            raise r.fail(
                f"{jp}.applicationId",
                f"{what} of application {app_id!r}: its queue is unknown (no application data "
                "and no queue label); add partition_applications_active.json",
            )
        if queue not in leaves:
            raise r.fail(f"{jp}.applicationId", f"{what} in unknown queue {queue!r}")
        if not leaves[queue]:
            raise r.fail(
                f"{jp}.applicationId", f"{what} in parent queue {queue!r}; tasks run in leaves"
            )
        return queue

    nodes: list[dict[str, Any]] = []
    allocations: list[dict[str, Any]] = []
    # the engine's object of each allocation read the fast way (None for the others),
    # handed to its validation: a hundred thousand of them are not read a second time
    built: list[Allocation | None] = []
    node_alloc_sum: dict[str, dict[str, int]] = {}
    node_reported: dict[str, dict[str, int]] = {}
    seen_keys: dict[str, str] = {}
    shim_pods = bool(by_uid or by_name) or not _PLAIN_ALLOCATIONS
    priorities: dict[str, int] = {}
    same_resources: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    checked_types = _CHECKED_TYPES

    def plain(a: object, nid: str, node_sum: dict[str, int]) -> dict[str, Any] | None:
        """One allocation of a node's answer as the careful loop below reads it, when it
        has the common form (every value of the expected type, nothing to warn about or
        refuse); else None, and the careful loop reads it (and names what is wrong)."""
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

    opted_out = 0
    if src.nodes is not None:
        file, base, items = src.nodes
        r = _Reader(file)
        seen_nodes: set[str] = set()
        for i, raw in enumerate(items):
            jp = f"{base}[{i}]"
            raw = r.obj(raw, jp)
            nid = r.key(raw.get("nodeID"), f"{jp}.nodeID")
            if nid in seen_nodes:
                raise r.fail(f"{jp}.nodeID", f"duplicate node {nid!r}")
            seen_nodes.add(nid)
            capacity = r.resource(raw.get("capacity"), f"{jp}.capacity")
            occupied = r.resource(raw.get("occupied"), f"{jp}.occupied")
            foreign: list[dict[str, Any]] = []
            foreign_sum: dict[str, int] = {}
            for k, fa in enumerate(
                r.arr(raw.get("foreignAllocations") or [], f"{jp}.foreignAllocations")
            ):
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
            nodes.append(node)
            node_reported[nid] = _drop_zeros(r.resource(raw.get("allocated"), f"{jp}.allocated"))
            node_alloc_sum[nid] = {}
            node_sum = node_alloc_sum[nid]
            for k, a in enumerate(r.arr(raw.get("allocations") or [], f"{jp}.allocations")):
                fast = plain(a, nid, node_sum)
                if fast is not None:
                    allocations.append(fast)
                    continue
                # anything else (an error to name, or a less common form) the careful way
                ajp = f"{jp}.allocations[{k}]"
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
                    raise r.fail(
                        f"{ajp}.nodeId", f"allocation listed under node {nid!r} says node {on!r}"
                    )
                app_id = r.string(a.get("applicationId"), f"{ajp}.applicationId", required=False)
                tags = _tags(r, a.get("allocationTags"), f"{ajp}.allocationTags")
                resources = r.resource(a.get("resource"), f"{ajp}.resource")
                _add_into(node_alloc_sum[nid], resources)
                pod = _pod_key(tags)
                shim = by_uid.get(key) or (by_name.get(pod) if pod else None)
                allow = True
                if shim is not None and shim.allow_preemption is not None:
                    allow = shim.allow_preemption
                if not allow:
                    opted_out += 1
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
                allocations.append(alloc)
                built.append(None)  # the engine reads and validates it
            if type(items) is list:
                # this node's answer is read: let its memory serve the next nodes' rows
                items[i] = None
    node_ids = {n["id"] for n in nodes}

    # pending asks, and allocations the applications list but the nodes do not
    asks: list[dict[str, Any]] = []
    ask_keys: set[str] = set()
    app_alloc_sum: dict[str, dict[str, int]] = {}
    app_alloc_keys: set[str] = set()
    missing_nodes: list[str] = []
    nodes_listed = src.nodes is not None
    # the resource maps found of the common form, by identity (equal maps of the answer
    # are one object: checked once); each held here, so that no other takes its id
    plain_maps: dict[int, dict[str, int]] = {}
    for r, jp, raw in app_raws:
        app_id = raw["applicationID"]
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
            if src.nodes is None:
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
        raw.clear()  # this application's answer is read (its allocations are the bulk)
    if missing_nodes:
        warnings.append(
            f"no nodes list (partition_nodes.json): the {len(missing_nodes)} allocations of the "
            "applications cannot be placed, so the snapshot holds no allocations and no usage"
        )

    # cross-checks against the scheduler's own sums
    if src.nodes is not None:
        _cross_check(src, usage, allocations, node_reported, node_alloc_sum, apps, app_alloc_sum)

    flag = _partition_flag(src, partition)
    scenario: dict[str, Any] = {}
    if src.captured_at is not None:
        scenario["now"] = src.captured_at
    scenario["partition"] = {"quota_preemption_enabled": flag, "miss": 0.0}
    scenario["queues"] = tree
    scenario["nodes"] = nodes
    scenario["allocations"] = allocations
    scenario["cluster_id"] = src.cluster_id or _cluster_id(src)
    scenario["captured_at"] = src.captured_at
    cluster = _validate(scenario, src, built)
    if opted_out:
        warnings.append(
            f"{opted_out} allocations opted out of preemption (yunikorn.apache.org/allow-preemption"
            " on the pod or its PriorityClass)"
        )
    return SnapshotImport(
        kind=src.kind,
        partition=partition,
        captured_at=src.captured_at,
        scenario=scenario,
        asks=tuple(sorted(asks, key=lambda a: a["key"])),
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


def _cluster_id(src: _Sources) -> str | None:
    if src.partitions is None:
        return None
    for p in src.partitions[2]:
        if isinstance(p, dict) and isinstance(p.get("clusterId"), str):
            return str(p["clusterId"])
    return None


def _partition_flag(src: _Sources, partition: str) -> bool:
    found: list[tuple[str, bool]] = []
    if src.partitions is not None:
        file, base, items = src.partitions
        r = _Reader(file)
        for i, p in enumerate(items):
            p = r.obj(p, f"{base}[{i}]")
            if (p.get("name") or "default") == partition:
                found.append((file, r.flag(p, "quotaPreemptionEnabled", f"{base}[{i}]")))
    if src.config is not None:
        file, base, conf = src.config
        r = _Reader(file)
        pre = f"{base}." if base else ""
        for i, p in enumerate(r.arr(conf.get("Partitions") or [], f"{pre}Partitions")):
            p = r.obj(p, f"{pre}Partitions[{i}]")
            name = p.get("Name") or "default"
            if isinstance(name, str) and (name.lower() == partition.lower()):
                pre_obj = r.obj(p.get("Preemption") or {}, f"{pre}Partitions[{i}].Preemption")
                found.append(
                    (
                        file,
                        r.flag(
                            pre_obj, "QuotaPreemptionEnabled", f"{pre}Partitions[{i}].Preemption"
                        ),
                    )
                )
    if not found:
        src.warnings.append(
            "no partitions.json or config.json: the partition's quotapreemptionenabled flag is "
            "unknown and imported as false (quota preemption disabled)"
        )
        return False
    values = {v for _, v in found}
    if len(values) > 1:
        src.warnings.append(
            "the quota preemption flag disagrees between "
            + ", ".join(f"{f} ({v})" for f, v in found)
            + f"; using {found[0][1]} from {found[0][0]}"
        )
    return found[0][1]
