"""YuniKorn's queue tree -> scenario queues, with the scheduler's own figures kept for checks."""

from __future__ import annotations

from typing import Any

from dashboard.importers import facts
from dashboard.importers.quantities import (
    format_resource,
)
from dashboard.importers.snapshot.access import INT32_MAX, INT32_MIN, Reader, _drop_zeros, _sub
from dashboard.importers.snapshot.statedump import _Sources
from engine.durations import DurationSyntaxError, read_go_duration

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-@:+=~")


def _check_queue_name(r: Reader, name: str, path: str) -> None:
    if not name:
        raise r.fail(path, "empty queue name")
    if "." in name or not set(name) <= _NAME_CHARS or len(name) > 253:
        raise r.fail(path, f"invalid queue name {name!r}")


def _queue_tree(
    src: _Sources,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, bool]]:
    """The scenario queue tree, the reported per-queue figures, and path -> is_leaf."""
    assert src.tree is not None
    file, base, root = src.tree
    r = Reader(file)
    usage: dict[str, dict[str, Any]] = {}
    leaves: dict[str, bool] = {}
    root = r.obj(root, base)
    name = r.key(root.get("queuename"), f"{base}.queuename" if base else "queuename")
    if name != "root":
        raise r.fail(
            f"{base}.queuename" if base else "queuename",
            f"the tree must start at root, not {name!r}",
        )
    out_root: dict[str, Any] = {}
    # iterative walk: (raw, json path, expected full path, output dict, parent managed)
    stack: list[tuple[dict[str, Any], str, str, dict[str, Any], bool]] = [
        (root, base, "root", out_root, True)
    ]
    while stack:
        raw, jp, path, out, parent_managed = stack.pop()
        pre = f"{jp}." if jp else ""
        qname = r.key(raw.get("queuename"), f"{pre}queuename")
        if qname != path:
            raise r.fail(f"{pre}queuename", f"expected {path!r} below its parent, got {qname!r}")
        leaf_name = path.rsplit(".", 1)[-1]
        _check_queue_name(r, leaf_name, f"{pre}queuename")
        out["name"] = leaf_name
        info = _queue_info(r, raw, pre, path, src.warnings)
        managed = info["is_managed"] and parent_managed
        for key in ("guaranteed", "max"):
            if info[key] is not None:
                out[key] = info[key]
        out["properties"] = info["engine_properties"]
        out["quota_preemption_delay"] = info["quota_preemption_delay"] if managed else 0.0
        out.update(facts.queue_facts(info, managed))
        del info["engine_properties"]
        usage[path] = info
        children_raw = raw.get("children")
        kids: list[dict[str, Any]] = []
        seen: set[str] = set()
        if children_raw is not None:
            for i, child in enumerate(r.arr(children_raw, f"{pre}children")):
                cjp = f"{pre}children[{i}]"
                child = r.obj(child, cjp)
                cname = r.key(child.get("queuename"), f"{cjp}.queuename")
                short = cname.rsplit(".", 1)[-1]
                if short in seen:
                    raise r.fail(f"{cjp}.queuename", f"duplicate queue {cname!r}")
                seen.add(short)
                cout: dict[str, Any] = {}
                kids.append(cout)
                stack.append((child, cjp, f"{path}.{short}", cout, managed))
        if kids:
            out["children"] = kids
        leaves[path] = not kids
    _sort_children(out_root)
    return out_root, usage, leaves


def _sort_children(root: dict[str, Any]) -> None:
    stack = [root]
    while stack:
        q = stack.pop()
        kids = q.get("children")
        if kids:
            kids.sort(key=lambda c: c["name"])
            stack.extend(kids)


def _queue_info(
    r: Reader, raw: dict[str, Any], pre: str, path: str, warnings: list[str]
) -> dict[str, Any]:
    """The scheduler's figures for one queue, and the engine's view of its properties."""
    res = {}
    for key in ("allocatedResource", "preemptingResource", "pendingResource"):
        res[key] = _drop_zeros(r.resource(raw.get(key), f"{pre}{key}"))
    headroom = r.resource(raw.get("headroom"), f"{pre}headroom", negative=True)
    limits: dict[str, dict[str, int] | None] = {}
    for key, label in (("guaranteedResource", "guaranteed"), ("maxResource", "max")):
        value = r.resource(raw.get(key), f"{pre}{key}")
        if value and not any(value.values()):
            warnings.append(
                f"{r.file}: {path} {label} {format_resource(value)} has no positive value; the "
                "scheduler treats it as not set (imported as not set)"
            )
            value = {}
        limits[label] = value or None
    props_raw = r.obj(raw.get("properties") or {}, f"{pre}properties")
    props: dict[str, str] = {}
    for k, v in props_raw.items():
        props[k] = r.string(v, f"{pre}properties.{k}")
    engine_props = dict(props)
    # properties are the effective ones; the evaluated fields say what the scheduler uses
    if "preemptionEnabled" in raw or "isPreemptionFence" in raw:
        if r.flag(raw, "isPreemptionFence", pre.rstrip(".")):
            engine_props["preemption.policy"] = "fence"
        elif not r.flag(raw, "preemptionEnabled", pre.rstrip("."), default=True):
            engine_props["preemption.policy"] = "disabled"
        else:
            engine_props["preemption.policy"] = "default"
    if "isPriorityFence" in raw:
        fence = r.flag(raw, "isPriorityFence", pre.rstrip("."))
        engine_props["priority.policy"] = "fence" if fence else "default"
        offset = r.integer(
            raw.get("priorityOffset", 0), f"{pre}priorityOffset", INT32_MIN, INT32_MAX
        )
        engine_props["priority.offset"] = str(offset)
    pdelay = raw.get("preemptionDelay")
    if pdelay is not None:
        engine_props["preemption.delay"] = r.string(pdelay, f"{pre}preemptionDelay")
    qdelay: float
    reported = raw.get("quotaPreemptionDelay")
    prop_delay = props.get("quota.preemption.delay")
    prop_seconds: float | None = None
    if prop_delay is not None:
        try:
            prop_seconds = max(read_go_duration(prop_delay), 0.0)
        except DurationSyntaxError:
            prop_seconds = 0.0
    if reported is not None:
        text = r.string(reported, f"{pre}quotaPreemptionDelay")
        try:
            qdelay = max(read_go_duration(text), 0.0)
        except DurationSyntaxError as exc:
            raise r.fail(f"{pre}quotaPreemptionDelay", str(exc)) from None
        if prop_seconds is not None and prop_seconds != qdelay:
            warnings.append(
                f"{r.file}: {path} property quota.preemption.delay {prop_delay!r} is not what the "
                f"scheduler uses ({text}); quota preemption follows {text}"
            )
    else:
        qdelay = prop_seconds or 0.0
    managed = r.flag(raw, "isManaged", pre.rstrip("."), default=True)
    status = r.string(raw.get("status"), f"{pre}status", required=False)
    return {
        "allocated": res["allocatedResource"],
        "preempting": res["preemptingResource"],
        "usage": _sub(res["allocatedResource"], res["preemptingResource"]),
        "pending": res["pendingResource"],
        "headroom": headroom,
        "guaranteed": limits["guaranteed"],
        "max": limits["max"],
        "is_leaf": r.flag(raw, "isLeaf", pre.rstrip(".")),
        "is_managed": managed,
        "status": status,
        "properties": props,
        "preemption_enabled": r.flag(raw, "preemptionEnabled", pre.rstrip("."), default=True),
        "is_preemption_fence": r.flag(raw, "isPreemptionFence", pre.rstrip(".")),
        "is_priority_fence": r.flag(raw, "isPriorityFence", pre.rstrip(".")),
        "priority_offset": int(engine_props.get("priority.offset", "0") or 0)
        if "isPriorityFence" in raw
        else None,
        "preemption_delay": engine_props.get("preemption.delay"),
        "quota_preemption_delay": qdelay,
        "running_apps": r.integer(raw.get("runningApps", 0), f"{pre}runningApps", 0),
        "max_running_apps": r.integer(raw.get("maxRunningApps", 0), f"{pre}maxRunningApps", 0)
        or None,
        "quota_preemption_start": r.time_ns(
            raw.get("quotaPreemptionStartTime"), f"{pre}quotaPreemptionStartTime"
        )
        or None,
        "quota_preemption_running": r.flag(raw, "isQuotaPreemptionRunning", pre.rstrip(".")),
        "remaining": facts.remaining(res["allocatedResource"], res["preemptingResource"]),
        "engine_properties": engine_props,
    }
