"""YuniKorn's own figures and facts for the snapshot rows, read from an imported scenario.

The snapshot importer keeps, as extra scenario keys the engine ignores, what the
scheduler reports beyond the engine contract (:mod:`dashboard.importers.facts`).
This module turns them into the column values of ``SnapshotQueue``,
``NodeSpan`` and ``AllocationSpan``. A plain scenario JSON carries none
of them; its rows get what such a scenario means: allocated = usage +
preempting (the engine's usage is what remains), status Active, not dynamic,
no application figures, reported capacity = capacity with nothing occupied, no
placeholders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from django.db.models import Q

from dashboard import models
from dashboard.services.snapshots.spans import snapshot_allocations

Resource = Mapping[str, int]

_STATUSES = frozenset(models.SnapshotQueue.Status.values)


@dataclass(frozen=True, slots=True)
class QueueFacts:
    allocated: dict[str, int]
    status: str = models.SnapshotQueue.Status.ACTIVE
    dynamic: bool = False
    max_applications: int | None = None
    running_apps: int | None = None


@dataclass(frozen=True, slots=True)
class NodeFacts:
    reported_capacity: dict[str, int]
    occupied: dict[str, int] = field(default_factory=dict)
    foreign_pods: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AllocationFacts:
    placeholder: bool = False
    placeholder_used: bool = False
    task_group: str = ""


NO_GANG = AllocationFacts()


def _resource(value: object) -> dict[str, int]:
    """The ``{type: int}`` part of *value* (quantities are never negative)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(t): q
        for t, q in value.items()
        if isinstance(q, int) and not isinstance(q, bool) and q >= 0
    }


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def added(a: Resource, b: Resource) -> dict[str, int]:
    """a + b over the types of both.

    >>> added({"vcore": 1000}, {"vcore": 500, "memory": 8})
    {'vcore': 1500, 'memory': 8}
    """
    out = dict(a)
    for t, q in b.items():
        out[t] = out.get(t, 0) + q
    return out


def _scenario_queues(scenario: Mapping[str, object]) -> Iterator[tuple[str, Mapping[str, object]]]:
    root = scenario.get("queues")
    if not isinstance(root, Mapping):
        return
    stack: list[tuple[str, Mapping[str, object]]] = [(str(root.get("name", "root")), root)]
    while stack:
        path, q = stack.pop()
        yield path, q
        children = q.get("children")
        if isinstance(children, list):
            stack.extend((f"{path}.{c.get('name')}", c) for c in children if isinstance(c, Mapping))


def plain_queue_facts(usage: Resource, preempting: Resource) -> QueueFacts:
    """A queue's facts when the scenario carries none: allocated = usage + preempting."""
    return QueueFacts(allocated=added(usage, preempting))


def queue_facts_by_path(scenario: Mapping[str, object]) -> dict[str, QueueFacts]:
    """The facts of every queue of *scenario* that carries them, by path."""
    out: dict[str, QueueFacts] = {}
    for path, q in _scenario_queues(scenario):
        if "allocated" not in q:
            continue
        status = q.get("status")
        out[path] = QueueFacts(
            allocated=_resource(q["allocated"]),
            status=status if isinstance(status, str) and status in _STATUSES else "Active",
            dynamic=q.get("dynamic") is True,
            # maxRunningApps 0 is "no limit"
            max_applications=_count(q.get("max_applications")) or None,
            running_apps=_count(q.get("running_apps")),
        )
    return out


def node_facts_by_id(scenario: Mapping[str, object]) -> dict[str, NodeFacts]:
    """The facts of every node of *scenario* that carries them, by node id."""
    out: dict[str, NodeFacts] = {}
    nodes = scenario.get("nodes")
    for n in nodes if isinstance(nodes, list) else ():
        if not isinstance(n, Mapping) or "reported_capacity" not in n:
            continue
        pods = n.get("foreign_pods")
        out[str(n.get("id"))] = NodeFacts(
            reported_capacity=_resource(n["reported_capacity"]),
            occupied=_resource(n.get("occupied")),
            foreign_pods=[dict(p) for p in pods if isinstance(p, Mapping)]
            if isinstance(pods, list)
            else [],
        )
    return out


def allocation_facts_by_key(scenario: Mapping[str, object]) -> dict[str, AllocationFacts]:
    """The gang-scheduling facts of the allocations of *scenario* that have any, by key."""
    out: dict[str, AllocationFacts] = {}
    allocations = scenario.get("allocations")
    for a in allocations if isinstance(allocations, list) else ():
        if type(a) is dict and not (
            "task_group" in a or "placeholder" in a or "placeholder_used" in a
        ):
            continue  # nearly all of them: no gang fact (NO_GANG)
        if not isinstance(a, Mapping):
            continue
        group = a.get("task_group")
        found = AllocationFacts(
            placeholder=a.get("placeholder") is True,
            placeholder_used=a.get("placeholder_used") is True,
            task_group=group[:255] if isinstance(group, str) else "",
        )
        if found != NO_GANG:
            out[str(a.get("key"))] = found
    return out


def allocation_pods(rows: object) -> dict[str, str]:
    """``namespace/name`` of each allocation's pod in a scenario's allocation list, by key
    (the snapshot importer's ``pod``, read from the allocation's tags)."""
    out: dict[str, str] = {}
    for a in rows if isinstance(rows, list) else ():
        if type(a) is dict:
            pod = a.get("pod")
            if type(pod) is str and pod:
                out[str(a.get("key"))] = pod
    return out


def gang_text(facts: AllocationFacts) -> str:
    """What a gang allocation is, in words (empty for an ordinary allocation).

    >>> gang_text(AllocationFacts(placeholder=True, task_group="spark-executor"))
    'gang placeholder of task group spark-executor: it holds room for a real pod of its gang'
    """
    group = f" of task group {facts.task_group}" if facts.task_group else ""
    if facts.placeholder:
        return f"gang placeholder{group}: it holds room for a real pod of its gang"
    if facts.placeholder_used:
        return f"gang member{group} that replaced its placeholder"
    return ""


def gang_allocations(
    snapshot: models.ClusterSnapshot | None, keys: Iterable[str] | None = None
) -> dict[str, dict[str, object]]:
    """The gang-scheduling facts of *snapshot*'s allocations that have any, by key.

    Each value holds ``placeholder``, ``placeholder_used``, ``task_group`` and
    ``text`` (:func:`gang_text`); *keys* narrows the answer to those allocations.
    Gang allocations are few, so they are read with one query and no key list.
    """
    if snapshot is None:
        return {}
    wanted = None if keys is None else set(keys)
    rows = (
        snapshot_allocations(snapshot)
        .filter(Q(placeholder=True) | Q(placeholder_used=True))
        .values_list("key", "placeholder", "placeholder_used", "task_group")
    )
    out: dict[str, dict[str, object]] = {}
    for key, placeholder, used, group in rows:
        if wanted is not None and key not in wanted:
            continue
        facts = AllocationFacts(placeholder=placeholder, placeholder_used=used, task_group=group)
        out[key] = {
            "placeholder": placeholder,
            "placeholder_used": used,
            "task_group": group,
            "text": gang_text(facts),
        }
    return out


def gang_victims_note(snapshot: models.ClusterSnapshot | None, keys: Iterable[str]) -> str:
    """``"; gang placeholders among them: k (task group g), ..."``, or ``""`` if none.

    For the texts that list victims (alerts): a placeholder taken holds back its gang.
    """
    gang = gang_allocations(snapshot, keys)
    taken = [
        f"{key} (task group {facts['task_group']})" if facts["task_group"] else key
        for key, facts in sorted(gang.items())
        if facts["placeholder"]
    ]
    if not taken:
        return ""
    return f"; gang placeholder{'s' if len(taken) != 1 else ''} among them: {', '.join(taken)}"
