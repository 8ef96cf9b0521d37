"""Writes the "lab-west" fixtures (rest/*.json) from one model of the cluster.

Run ``python tests/dashboard/data/cluster-b/generate.py`` after changing the model:
every file is derived from the same allocations, so keys, sums and timestamps agree.
The JSON follows yunikorn-core's DAO structs (field order, ``omitempty``) and is
written compact, on one line, as the scheduler's ``json.Encoder`` sends it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CLUSTER = "lab-west"
PARTITION = "default"
GI = 1024**3
MI = 1024**2
NS = 10**9
CAPTURE = 1791986400  # 2026-10-14T14:00:00Z
NOBODY = -2147483648  # currentPriority / maxRequestPriority when nothing is pending
EVENTS_START = 48100


def at(hhmmss: str, frac_ns: int = 0) -> int:
    """Nanoseconds since the epoch of a time of day on 2026-10-14 (UTC)."""
    h, m, s = (int(x) for x in hhmmss.split(":"))
    return (CAPTURE + (h - 14) * 3600 + m * 60 + s) * NS + frac_ns


def res(vcore: int, memory_gi: float, pods: int = 1) -> dict[str, int]:
    return {"memory": int(memory_gi * GI), "pods": pods, "vcore": vcore}


def key(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{CLUSTER}/{name}"))


def add(acc: dict[str, int], r: dict[str, int], sign: int = 1) -> None:
    for t, q in r.items():
        acc[t] = acc.get(t, 0) + sign * q


def nz(r: dict[str, int]) -> dict[str, int]:
    return {t: r[t] for t in sorted(r) if r[t]}


def srt(r: dict[str, int]) -> dict[str, int]:
    return {t: r[t] for t in sorted(r)}


# ------------------------------------------------------------------ the model

NODES = {
    "node-a": {"ephemeral-storage": 200 * GI, "memory": 48 * GI, "pods": 110, "vcore": 12000},
    "node-b": {"ephemeral-storage": 200 * GI, "memory": 32 * GI, "pods": 110, "vcore": 8000},
    "node-c": {"ephemeral-storage": 100 * GI, "memory": 32 * GI, "pods": 110, "vcore": 8000},
}

FOREIGN: list[tuple[str, str, str, dict[str, int], str, int]] = [
    # node, namespace, pod, resource, priority, created
    (
        "node-a",
        "kube-system",
        "metrics-server-7c9f5d8b6-hx2lq",
        {"memory": 512 * MI, "pods": 1, "vcore": 500},
        "2000000000",
        at("08:00:00"),
    ),
    ("node-b", "monitoring", "prometheus-k8s-0", res(2000, 8), "0", at("08:05:00")),
]

# app id -> queue, user, groups, namespace, submitted
APPS: dict[str, dict[str, Any]] = {
    "etl-nightly-20261014": {
        "queue": "root.etl",
        "user": "etl-bot",
        "ns": "etl",
        "at": at("13:40:00"),
    },
    "etl-hourly-1400": {"queue": "root.etl", "user": "etl-bot", "ns": "etl", "at": at("13:39:00")},
    "report-builder-q4": {
        "queue": "root.reports",
        "user": "bi-svc",
        "ns": "bi",
        "at": at("12:10:00"),
    },
    "adhoc-dash-77": {
        "queue": "root.reports",
        "user": "analyst-kim",
        "ns": "bi",
        "at": at("13:20:00"),
    },
    "notebook-dave": {
        "queue": "root.sandbox",
        "user": "dave",
        "ns": "sandbox",
        "at": at("11:30:00"),
    },
    "legacy-cron-5": {
        "queue": "root.legacy",
        "user": "ops-cron",
        "ns": "legacy",
        "at": at("13:00:00"),
    },
    "team-x-api": {
        "queue": "root.tenants.team-x",
        "user": "team-x-deployer",
        "ns": "team-x",
        "at": at("09:15:00"),
    },
}

# pod -> app, node, resource, extra DAO fields, created
ALLOCS: list[dict[str, Any]] = []


def alloc(pod: str, app: str, node: str, r: dict[str, int], created: int, **extra: Any) -> None:
    ALLOCS.append({"pod": pod, "app": app, "node": node, "res": r, "at": created, **extra})


# root.etl: a gang application (driver replaced its placeholder, two executor placeholders
# still held) and the hourly job whose executors preempted two sandbox notebooks
alloc(
    "etl-nightly-20261014-driver",
    "etl-nightly-20261014",
    "node-c",
    res(1000, 4),
    at("13:40:06"),
    requested=at("13:40:01"),
    placeholder_used=True,
    task_group="spark-driver",
    originator=True,
)
alloc(
    "tg-etl-nightly-20261014-spark-executor-0",
    "etl-nightly-20261014",
    "node-c",
    res(1000, 4),
    at("13:40:01", 200),
    placeholder=True,
    task_group="spark-executor",
)
alloc(
    "tg-etl-nightly-20261014-spark-executor-1",
    "etl-nightly-20261014",
    "node-c",
    res(1000, 4),
    at("13:40:01", 400),
    placeholder=True,
    task_group="spark-executor",
)
alloc(
    "etl-hourly-1400-exec-0",
    "etl-hourly-1400",
    "node-a",
    res(1000, 4),
    at("13:45:32"),
    requested=at("13:44:59"),
)
alloc("etl-hourly-1400-exec-1", "etl-hourly-1400", "node-c", res(1000, 4), at("13:39:05"))
# root.reports: the builder and the ad-hoc dashboard whose two pods quota preemption took
for i in range(6):
    alloc(
        f"report-builder-q4-{i}",
        "report-builder-q4",
        "node-a" if i < 3 else "node-b",
        res(2000, 6),
        at("12:10:00", i * 1000),
    )
alloc(
    "adhoc-dash-77-0",
    "adhoc-dash-77",
    "node-a",
    res(1000, 2),
    at("13:20:00"),
    priority="-10",
    preempted=True,
)
alloc(
    "adhoc-dash-77-1",
    "adhoc-dash-77",
    "node-a",
    res(1000, 2),
    at("13:20:01"),
    priority="-10",
    preempted=True,
)
# root.sandbox: its only allocation is being preempted for the etl ask
alloc("notebook-dave-0", "notebook-dave", "node-c", res(2000, 8), at("11:30:00"), preempted=True)
# root.legacy: removed from the config at 13:30 (Draining), one cron pod still running
alloc("legacy-cron-5-job", "legacy-cron-5", "node-c", res(1000, 2), at("13:00:00"))
# root.tenants.team-x: a dynamic queue made from the child template
alloc("team-x-api-5f7d9-abcde", "team-x-api", "node-a", res(1000, 2), at("09:15:00"))

PENDING: dict[str, Any] = {
    "pod": "etl-hourly-1400-exec-2",
    "app": "etl-hourly-1400",
    "res": res(2000, 8),
    "at": at("13:56:59"),
}

QUOTA_VICTIMS = ["adhoc-dash-77-0", "adhoc-dash-77-1"]
SANDBOX_VICTIM = "notebook-dave-0"
# released earlier: notebook-erin's pod, preempted at 13:45:00 for etl-hourly-1400-exec-0
ERIN: dict[str, Any] = {
    "pod": "notebook-erin-0",
    "app": "notebook-erin",
    "node": "node-a",
    "res": res(2000, 8),
}

# queue path -> static facts (after the 13:58 config)
QUEUES: dict[str, dict[str, Any]] = {
    "root": {"status": "Active", "managed": True, "props": {}},
    "root.etl": {
        "status": "Active",
        "managed": True,
        "max": {"memory": 48 * GI, "vcore": 8000},
        "guaranteed": {"memory": 32 * GI, "vcore": 8000},
        "props": {"application.sort.policy": "fifo", "quota.preemption.delay": "10m"},
        "qdelay": "10m0s",
        "max_apps": 3,
    },
    "root.legacy": {
        "status": "Draining",
        "managed": True,
        "max": {"memory": 8 * GI, "vcore": 4000},
        "props": {},
    },
    "root.reports": {
        "status": "Active",
        "managed": True,
        "max": {"memory": 48 * GI, "vcore": 11000},
        "props": {"quota.preemption.delay": "20m"},
        "qdelay": "20m0s",
        # the 13:58 decrease left usage (12 cores) above the new max (11): timer set
        "quota_start": at("13:58:00") + 20 * 60 * NS,
    },
    "root.sandbox": {
        "status": "Active",
        "managed": True,
        "max": {"memory": 32 * GI, "vcore": 8000},
        "props": {},
    },
    "root.tenants": {
        "status": "Active",
        "managed": True,
        "props": {},
        "parent": True,
        "template": {
            "maxApplications": 2,
            "maxResource": {"memory": 16 * GI, "vcore": 4000},
            "properties": {"application.sort.policy": "fifo"},
        },
    },
    "root.tenants.team-x": {
        "status": "Active",
        "managed": False,
        "max": {"memory": 16 * GI, "vcore": 4000},
        "props": {"application.sort.policy": "fifo"},
        "max_apps": 2,
    },
}


# ------------------------------------------------------------------ derived figures


def tags(pod: str, app: str, queue: str, ns: str, **more: str) -> dict[str, str]:
    t = {
        "kubernetes.io/label/applicationId": app,
        "kubernetes.io/label/queue": queue,
        "kubernetes.io/meta/namespace": ns,
        "kubernetes.io/meta/podName": pod,
    }
    t.update(more)
    return dict(sorted(t.items()))


def alloc_dao(a: dict[str, Any]) -> dict[str, Any]:
    app = APPS[a["app"]]
    extra = {}
    if a.get("task_group"):
        extra["kubernetes.io/label/yunikorn.apache.org/task-group-name"] = a["task_group"]
    if a.get("placeholder"):
        extra["kubernetes.io/label/placeholder"] = "true"
    out: dict[str, Any] = {
        "allocationKey": key(a["pod"]),
        "allocationTags": tags(a["pod"], a["app"], app["queue"], app["ns"], **extra),
        "requestTime": a.get("requested", a["at"]),
        "allocationTime": a["at"],
    }
    if a.get("requested", a["at"]) != a["at"]:
        out["allocationDelay"] = a["at"] - a["requested"]
    out["resource"] = srt(a["res"])
    out["priority"] = a.get("priority", "0")
    out["nodeId"] = a["node"]
    out["applicationId"] = a["app"]
    if a.get("placeholder"):
        out["placeholder"] = True
    if a.get("placeholder_used"):
        out["placeholderUsed"] = True
    if a.get("task_group"):
        out["taskGroupName"] = a["task_group"]
    if a.get("preempted"):
        out["preempted"] = True
    if a.get("originator"):
        out["originator"] = True
    return out


def ancestors(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def queue_sums() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    allocated: dict[str, dict[str, int]] = {q: {} for q in QUEUES}
    preempting: dict[str, dict[str, int]] = {q: {} for q in QUEUES}
    for a in ALLOCS:
        for q in ancestors(APPS[a["app"]]["queue"]):
            add(allocated[q], a["res"])
            if a.get("preempted"):
                add(preempting[q], a["res"])
    return allocated, preempting


def total_capacity() -> dict[str, int]:
    tot: dict[str, int] = {}
    for cap in NODES.values():
        add(tot, cap)
    return srt(tot)


def children(path: str) -> list[str]:
    return sorted(q for q in QUEUES if q.rsplit(".", 1)[0] == path and q != path)


def running(path: str) -> int:
    return sum(
        1 for app in APPS.values() if app["queue"] in (path,) or app["queue"].startswith(path + ".")
    )


def queue_dao(
    path: str,
    allocated: dict[str, dict[str, int]],
    preempting: dict[str, dict[str, int]],
    headroom_parent: dict[str, int] | None,
    nested: bool,
) -> dict[str, Any]:
    facts = QUEUES[path]
    kids = children(path)
    is_root = path == "root"
    mx = total_capacity() if is_root else facts.get("max")
    alloc_q = allocated[path]
    # types ever requested below the queue, zero when nothing is pending
    requested = {
        t: 0
        for a in ALLOCS
        if APPS[a["app"]]["queue"] in [path] + [q for q in QUEUES if q.startswith(path + ".")]
        for t in a["res"]
    }
    pending = dict(requested)
    if path in ancestors(APPS[PENDING["app"]]["queue"]):
        add(pending, PENDING["res"])
    own_head = {t: mx[t] - alloc_q.get(t, 0) for t in mx} if mx else {}
    if headroom_parent is None:
        headroom = own_head
    else:
        headroom = dict(headroom_parent)
        for t, v in own_head.items():
            headroom[t] = min(v, headroom.get(t, v))
    out: dict[str, Any] = {
        "queuename": path,
        "status": facts["status"],
        "partition": PARTITION if is_root else "",
    }
    if pending:
        out["pendingResource"] = srt(pending)
    if mx:
        out["maxResource"] = srt(mx)
    if facts.get("guaranteed"):
        out["guaranteedResource"] = srt(facts["guaranteed"])
    if nz(alloc_q):
        out["allocatedResource"] = nz(alloc_q)
    if nz(preempting[path]):
        out["preemptingResource"] = nz(preempting[path])
    out["headroom"] = srt(headroom)
    out["isLeaf"] = not kids and not facts.get("parent")
    out["isManaged"] = facts["managed"]
    if facts["props"]:
        out["properties"] = dict(sorted(facts["props"].items()))
    if not is_root:
        out["parent"] = path.rsplit(".", 1)[0]
    if facts.get("template"):
        out["template"] = facts["template"]
    child_daos = [queue_dao(k, allocated, preempting, headroom, nested) for k in kids]
    if kids:
        if nested:
            out["children"] = child_daos
        else:
            out["childNames"] = kids
    if mx:
        used = {t: alloc_q[t] * 100 // mx[t] for t in sorted(mx) if alloc_q.get(t) and mx[t]}
        if used:
            out["absUsedCapacity"] = used
    if facts.get("max_apps"):
        out["maxRunningApps"] = facts["max_apps"]
    if running(path):
        out["runningApps"] = running(path)
    pending_here = path in ancestors(APPS[PENDING["app"]]["queue"])
    out["currentPriority"] = 0 if pending_here else NOBODY
    fifo = facts["props"].get("application.sort.policy") == "fifo"
    out["sortingPolicy"] = "fifo" if fifo else "fair"
    out["prioritySorting"] = True
    out["preemptionEnabled"] = True
    out["isPreemptionFence"] = False
    out["preemptionDelay"] = "30s"
    out["quotaPreemptionDelay"] = facts.get("qdelay", "0s")
    out["isPriorityFence"] = False
    if facts.get("quota_start"):
        # documented by yunikorn-site (YUNIKORN-3277); newer cores send it
        out["isQuotaPreemptionRunning"] = False
        out["quotaPreemptionStartTime"] = facts["quota_start"]
    return out


def nodes_dao() -> list[dict[str, Any]]:
    out = []
    for nid, cap in NODES.items():
        mine = [a for a in ALLOCS if a["node"] == nid]
        allocated: dict[str, int] = {}
        for a in mine:
            add(allocated, a["res"])
        occupied: dict[str, int] = {}
        foreign = []
        for on, ns, pod, r, prio, created in FOREIGN:
            if on != nid:
                continue
            add(occupied, r)
            foreign.append(
                {
                    "allocationKey": key(f"foreign/{ns}/{pod}"),
                    "allocationTags": {
                        "creationTime": str(created // NS),
                        "foreign": "default",
                        "kubernetes.io/meta/namespace": ns,
                        "kubernetes.io/meta/podName": pod,
                    },
                    "allocationTime": created,
                    "resource": srt(r),
                    "priority": prio,
                    "nodeId": nid,
                    "preemptable": prio == "0",
                }
            )
        available = dict(cap)
        add(available, allocated, -1)
        add(available, occupied, -1)
        node: dict[str, Any] = {
            "nodeID": nid,
            "attributes": {
                "si.io/hostname": nid,
                "si.io/rackname": "/rack-default",
                "si/node-partition": f"[{CLUSTER}]{PARTITION}",
            },
            "capacity": nz(cap),
            "allocated": nz(allocated),
        }
        if occupied:
            node["occupied"] = nz(occupied)
        node["available"] = nz(available)
        node["utilized"] = {t: allocated[t] * 100 // cap[t] for t in sorted(allocated)}
        node["allocations"] = [alloc_dao(a) for a in sorted(mine, key=lambda a: a["pod"])]
        if foreign:
            node["foreignAllocations"] = foreign
        node["schedulable"] = True
        node["isReserved"] = False
        out.append(node)
    return out


def apps_dao() -> list[dict[str, Any]]:
    out = []
    for app_id in sorted(APPS):
        app = APPS[app_id]
        mine = [a for a in ALLOCS if a["app"] == app_id]
        used: dict[str, int] = {}
        for a in mine:
            add(used, a["res"])
        pending = {t: 0 for t in used}
        requests = []
        if PENDING["app"] == app_id:
            add(pending, PENDING["res"])
            requests.append(
                {
                    "allocationKey": key(PENDING["pod"]),
                    "allocationTags": tags(PENDING["pod"], app_id, app["queue"], app["ns"]),
                    "requestTime": PENDING["at"],
                    "resource": srt(PENDING["res"]),
                    "priority": "0",
                    "applicationId": app_id,
                    "triggeredPreemption": True,
                    "schedulingAttempted": True,
                }
            )
        d: dict[str, Any] = {
            "applicationID": app_id,
            "usedResource": nz(used),
            "maxUsedResource": nz(used),
            "pendingResource": srt(pending),
            "partition": PARTITION,
            "queueName": app["queue"],
            "submissionTime": app["at"],
        }
        if requests:
            d["requests"] = requests
        d["allocations"] = [alloc_dao(a) for a in sorted(mine, key=lambda a: a["pod"])]
        d["applicationState"] = "Running"
        d["user"] = app["user"]
        d["groups"] = ["system:authenticated"]
        d["stateLog"] = [
            {"time": app["at"] + 1_000_000, "applicationState": "Accepted"},
            {"time": app["at"] + 5_000_000, "applicationState": "Running"},
        ]
        d["maxRequestPriority"] = 0 if requests else NOBODY
        d["startTime"] = (app["at"] + 5_000_000) // 10**6
        d["resourceHistory"] = {}
        out.append(d)
    return out


def pres(r: dict[str, int]) -> dict[str, Any]:
    """A protobuf-shaped si.Resource as the events carry it."""
    return {"resources": {t: {"value": r[t]} for t in sorted(r)}} if r else {}


def gomap(r: dict[str, int]) -> str:
    return "map[" + " ".join(f"{t}:{r[t]}" for t in sorted(r)) + "]"


def events() -> dict[str, Any]:
    by_pod = {a["pod"]: a for a in ALLOCS}
    hourly_0 = by_pod["etl-hourly-1400-exec-0"]
    recs: list[dict[str, Any]] = [
        # 13:30:00 config reload: root.reports max 16 -> 12 cores
        {
            "type": 4,
            "objectID": "root.reports",
            "timestampNano": at("13:30:00", 4_118_220),
            "eventChangeType": 1,
            "eventChangeDetail": 403,
            "resource": pres({"memory": 48 * GI, "vcore": 12000}),
        },
        # 13:44:59 etl-hourly-1400 asks for its executor 0
        {
            "type": 2,
            "objectID": "etl-hourly-1400",
            "timestampNano": at("13:44:59"),
            "eventChangeType": 2,
            "eventChangeDetail": 201,
            "referenceID": key(hourly_0["pod"]),
            "resource": pres(hourly_0["res"]),
        },
        # 13:45:00 it preempts notebook-erin's pod in root.sandbox
        {
            "type": 1,
            "objectID": key(ERIN["pod"]),
            "message": f"Preempted by {key(hourly_0['pod'])} from application etl-hourly-1400 in "
            "root.etl",
            "timestampNano": at("13:45:00", 7_310_554),
            "referenceID": ERIN["app"],
            "resource": pres(ERIN["res"]),
        },
        # 13:45:31 the victim is released: ALLOC_PREEMPT on its application
        {
            "type": 2,
            "objectID": ERIN["app"],
            "timestampNano": at("13:45:31", 2_004_118),
            "eventChangeType": 3,
            "eventChangeDetail": 501,
            "referenceID": key(ERIN["pod"]),
            "resource": pres(ERIN["res"]),
        },
        {
            "type": 3,
            "objectID": ERIN["node"],
            "timestampNano": at("13:45:31", 2_009_871),
            "eventChangeType": 3,
            "eventChangeDetail": 303,
            "referenceID": key(ERIN["pod"]),
            "resource": pres(ERIN["res"]),
        },
        # 13:45:32 executor 0 gets the freed room
        {
            "type": 2,
            "objectID": "etl-hourly-1400",
            "timestampNano": hourly_0["at"],
            "eventChangeType": 2,
            "eventChangeDetail": 200,
            "referenceID": key(hourly_0["pod"]),
            "resource": pres(hourly_0["res"]),
        },
        {
            "type": 3,
            "objectID": hourly_0["node"],
            "timestampNano": hourly_0["at"] + 4_210,
            "eventChangeType": 2,
            "eventChangeDetail": 303,
            "referenceID": key(hourly_0["pod"]),
            "resource": pres(hourly_0["res"]),
        },
    ]
    # 13:50:00 the root.reports timer fires: 14 cores in use against 12
    t = at("13:50:00", 11_912_340)
    claimed: dict[str, int] = {}
    for i, pod in enumerate(QUOTA_VICTIMS):
        a = by_pod[pod]
        add(claimed, a["res"])
        recs.append(
            {
                "type": 1,
                "objectID": key(pod),
                "message": "Preempted by Quota change enforcement process in root.reports",
                "timestampNano": t + i * 10_108,
                "referenceID": a["app"],
                "resource": pres(a["res"]),
            }
        )
    candidates = sum(1 for a in ALLOCS if APPS[a["app"]]["queue"] == "root.reports")
    recs.append(
        {
            "type": 4,
            "objectID": "root.reports",
            "message": f"Quota Preemption results summary: preemptable resources: "
            f"{gomap({'vcore': 2000})}, claimed resources: {gomap(claimed)}, selected "
            f"victims: {candidates}, preempted victims: {len(QUOTA_VICTIMS)}",
            "timestampNano": t + 38_664,
            "eventChangeType": 1,
            "eventChangeDetail": 407,
            "resource": pres({"memory": 48 * GI, "vcore": 12000}),
        }
    )
    # 13:56:59 the third hourly executor asks; 13:57:00 it preempts notebook-dave
    recs.append(
        {
            "type": 2,
            "objectID": "etl-hourly-1400",
            "timestampNano": PENDING["at"],
            "eventChangeType": 2,
            "eventChangeDetail": 201,
            "referenceID": key(PENDING["pod"]),
            "resource": pres(PENDING["res"]),
        }
    )
    dave = by_pod[SANDBOX_VICTIM]
    recs.append(
        {
            "type": 1,
            "objectID": key(SANDBOX_VICTIM),
            "message": f"Preempted by {key(PENDING['pod'])} from application "
            "etl-hourly-1400 in root.etl",
            "timestampNano": at("13:57:00", 3_377_001),
            "referenceID": dave["app"],
            "resource": pres(dave["res"]),
        }
    )
    # 13:58:00 config reload: root.reports max 12 -> 11 cores
    recs.append(
        {
            "type": 4,
            "objectID": "root.reports",
            "timestampNano": at("13:58:00", 5_226_870),
            "eventChangeType": 1,
            "eventChangeDetail": 403,
            "resource": pres({"memory": 48 * GI, "vcore": 11000}),
        }
    )
    recs.sort(key=lambda r: r["timestampNano"])
    return {
        "InstanceUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, CLUSTER)),
        "LowestID": EVENTS_START - 100,
        "HighestID": EVENTS_START + len(recs) - 1,
        "EventRecords": recs,
    }


def partitions_dao(allocated: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    cap = total_capacity()
    used = nz(allocated["root"])
    return [
        {
            "clusterId": CLUSTER,
            "name": PARTITION,
            "capacity": {
                "capacity": cap,
                "usedCapacity": used,
                "utilization": {t: used[t] * 100 // cap[t] for t in used},
            },
            "nodeSortingPolicy": {"type": "fair", "resourceWeights": {"memory": 1, "vcore": 1}},
            "preemptionEnabled": True,
            "quotaPreemptionEnabled": True,
            "totalNodes": len(NODES),
            "applications": {"Running": len(APPS), "total": len(APPS)},
            "totalContainers": len(ALLOCS),
            "state": "Active",
            "lastStateTransitionTime": at("06:00:00", 993_097_883),
        }
    ]


def write(name: str, doc: Any) -> None:
    (HERE / "rest" / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


GO_NAMES = {
    "maxapplications": "MaxApplications",
    "submitacl": "SubmitACL",
    "adminacl": "AdminACL",
    "childtemplate": "ChildTemplate",
    "placementrules": "PlacementRules",
    "quotapreemptionenabled": "QuotaPreemptionEnabled",
}


def go_json(value: Any) -> Any:
    """A queues.yaml value as encoding/json writes the scheduler's structs: Go field
    names, every Resources and ChildTemplate present, a rule's Filter always there."""
    if isinstance(value, list):
        return [go_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in ("guaranteed", "max", "properties") or "." in k:
            out[GO_NAMES.get(k, k.capitalize())] = {str(t): str(q) for t, q in v.items()}
        elif k == "create" and v is False:
            continue
        else:
            out[GO_NAMES.get(k, k.capitalize())] = go_json(v)
    return out


def config_answer() -> dict[str, Any]:
    """``GET /ws/v1/config`` (Accept: application/json) while config/queues.yaml is live."""
    from ruamel.yaml import YAML

    text = (HERE / "config" / "queues.yaml").read_text()
    doc = YAML(typ="safe").load(text)

    def queue(q: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = go_json({k: v for k, v in q.items() if k != "queues"})
        if out["Name"] == "root":
            out["Parent"] = True  # the scheduler's load marks root a parent
        out.setdefault("Resources", {})
        template = out.setdefault("ChildTemplate", {})
        template.setdefault("Resources", {})
        if q.get("queues"):
            out["Queues"] = [queue(c) for c in q["queues"]]
        return out

    def rule(r: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = go_json({k: v for k, v in r.items() if k != "parent"})
        out.setdefault("Filter", {"Type": ""})
        if r.get("parent"):
            out["Parent"] = rule(r["parent"])
        return out

    partitions = []
    for p in doc["partitions"]:
        partitions.append(
            {
                "Name": p["name"],
                "Queues": [queue(q) for q in p["queues"]],
                "PlacementRules": [rule(r) for r in p.get("placementrules") or []],
                "Preemption": go_json(p.get("preemption") or {}),
                "NodeSortPolicy": {"Type": ""},
                "UserGroupResolver": {},
            }
        )
    return {
        "Partitions": partitions,
        "Checksum": hashlib.sha256(text.encode()).hexdigest().upper(),
        "Extra": {"log.level": "INFO", "service.schedulingInterval": "1s"},
        "DeadlockDetectionEnabled": False,
        "DeadlockTimeoutSeconds": 60,
    }


def main() -> None:
    allocated, preempting = queue_sums()
    write("partitions.json", partitions_dao(allocated))
    write("partition_queues.json", queue_dao("root", allocated, preempting, None, True))
    write("partition_nodes.json", nodes_dao())
    write("partition_applications_active.json", apps_dao())
    write("events_batch.json", events())
    (HERE / "config" / "config.json").write_text(
        json.dumps(config_answer(), separators=(",", ":")) + "\n"
    )


if __name__ == "__main__":
    main()
