"""The applications answers: each answer trimmed to what is read as soon as it is
decoded, the applications by id (merged over files) with their state log and gang
facts, and how an allocation's or an ask's queue is found from its application."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dashboard.importers.snapshot.access import Reader, _drop_zeros
from dashboard.importers.snapshot.result import GO_ZERO_TIME_MS, TAG_QUEUE
from dashboard.importers.snapshot.statedump import _Sources

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
    r: Reader, raw: dict[str, Any], jp: str, gangless: bool = False
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
) -> tuple[dict[str, dict[str, Any]], list[tuple[Reader, str, dict[str, Any]]]]:
    """Applications by id (merged over files) and their raw objects with locations."""
    apps: dict[str, dict[str, Any]] = {}
    raws: list[tuple[Reader, str, dict[str, Any]]] = []
    for file, base, items in src.apps:
        r = Reader(file)
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


#: The queue of an allocation or an ask: ``queue_of(reader, json path, application id,
#: tags, what)`` (see :func:`_queue_finder`).
_QueueOf = Callable[[Reader, str, str, Mapping[str, str], str], str]


def _queue_finder(
    apps: Mapping[str, dict[str, Any]], leaves: Mapping[str, bool], warnings: list[str]
) -> _QueueOf:
    """How the queue of an allocation or an ask is found: its application's, else its
    pod's queue label (with a warning); refused when neither is known, or when the
    queue is unknown or a parent."""

    def queue_of(r: Reader, jp: str, app_id: str, tags: Mapping[str, str], what: str) -> str:
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

    return queue_of
