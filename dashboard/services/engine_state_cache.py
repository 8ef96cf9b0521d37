"""Stored snapshot rows -> the engine's cluster, ask and scenario values.

A snapshot never changes once stored, so its engine state (the cluster built
from its rows, its ``now``, its queue tree) is built once per process and kept
in a small cache keyed by the snapshot's id and checksum; pages and runs of the
same snapshot reuse it instead of reading tens of thousands of rows again.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from dashboard import models
from dashboard.plumbing.clock import epoch
from dashboard.plumbing.errors import ServiceError
from dashboard.services.limits import validate_resource
from dashboard.services.snapshots.facts import gang_allocations
from dashboard.services.snapshots.spans import engine_allocations, engine_nodes
from engine import model as em
from engine.preempt_state import PreemptionState
from engine.queues import Snapshot as QueueSnapshot
from engine.queues import build_snapshot
from engine.scenario import cluster_to_dict, queue_kinds

#: Snapshots whose engine state a process keeps (the least recently used goes first).
STATE_CACHE_SIZE = 4


class EngineState:
    """A stored snapshot as the engine sees it: built once, shared, never mutated."""

    __slots__ = ("_preemption", "_queues", "cluster", "gang", "kinds", "now", "preemption_lock")

    def __init__(
        self,
        cluster: em.Cluster,
        now: float,
        gang: Mapping[str, Mapping[str, object]] | None = None,
    ) -> None:
        self.cluster = cluster
        self.now = now
        self.kinds: Mapping[str, bool] = queue_kinds(cluster.root)
        self._queues: QueueSnapshot | None = None
        #: the gang placeholders (and replaced ones) by allocation key: the engine knows
        #: no gangs, the explanations name them
        self.gang: Mapping[str, Mapping[str, object]] = gang or {}
        self._preemption: PreemptionState | None = None
        #: held while an ask is evaluated against :attr:`preemption` (its working
        #: usage changes during an evaluation and is restored after it)
        self.preemption_lock = threading.Lock()

    @property
    def queues(self) -> QueueSnapshot:
        """The engine's queue snapshot (usage, preemptable), built on first use."""
        if self._queues is None:
            self._queues = build_snapshot(self.cluster)
        return self._queues

    @property
    def preemption(self) -> PreemptionState:
        """The engine's preemption state of the cluster (node indexes, sums), built on first
        use and reused by every ask evaluated on this snapshot (under preemption_lock)."""
        if self._preemption is None:
            self._preemption = PreemptionState(self.cluster, self.queues)
        return self._preemption


_states: OrderedDict[tuple[int, str], EngineState] = OrderedDict()
_states_lock = threading.Lock()


def engine_state(snapshot: models.ClusterSnapshot) -> EngineState:
    """The engine state of *snapshot*, from the process cache or built from its rows."""
    key = (snapshot.pk, snapshot.checksum)
    with _states_lock:
        state = _states.get(key)
        if state is not None:
            _states.move_to_end(key)
            return state
    state = EngineState(
        _cluster_from_rows(snapshot), snapshot_now(snapshot), gang_allocations(snapshot)
    )
    with _states_lock:
        _states[key] = state
        while len(_states) > STATE_CACHE_SIZE:
            _states.popitem(last=False)
    return state


def warm_engine_state(snapshot_id: int, *, newest_only: bool = False) -> bool:
    """Build the engine state of snapshot *snapshot_id* in this process, if not built yet.

    Sent as a task when a snapshot is stored, so a worker has the state (its queue
    snapshot with every queue's preemptable, and its preemption state) before the
    first run on it.
    False when the snapshot no longer exists (thinned or deleted meanwhile), and with
    *newest_only* (the task) when a newer snapshot of its partition is stored already:
    a source polled every few seconds stores the next one before the workers reach
    the warm-up of the last, and what-ifs ask of the newest.
    """
    snapshot = models.ClusterSnapshot.objects.defer("scenario").filter(pk=snapshot_id).first()
    if snapshot is None:
        return False
    if newest_only:
        newest = (
            models.ClusterSnapshot.objects.filter(partition_id=snapshot.partition_id)
            .order_by("-captured_at", "-id")
            .values_list("pk", flat=True)
            .first()
        )
        if newest != snapshot.pk:
            return False
    state = engine_state(snapshot)
    with state.preemption_lock:
        state.preemption  # noqa: B018  # built on first use (with the queues): build it now
    return True


def is_engine_state_cached(snapshot: models.ClusterSnapshot) -> bool:
    """Whether this process holds the engine state of *snapshot* already."""
    with _states_lock:
        return (snapshot.pk, snapshot.checksum) in _states


def forget_engine_states() -> None:
    """Empty this process's cache of engine states (as in a freshly started process)."""
    with _states_lock:
        _states.clear()


def cluster_from_snapshot(
    snapshot: models.ClusterSnapshot,
    *,
    partition: em.Partition | None = None,
    preempted: Iterable[str] = (),
) -> em.Cluster:
    """The engine's Cluster of a stored snapshot (its cached engine state).

    Args:
        snapshot: the stored snapshot.
        partition: partition settings to use instead of the snapshot's own.
        preempted: allocation keys to treat as already preempted (victims of
            quota enforcement runs recorded since the snapshot was taken).
    """
    cluster = engine_state(snapshot).cluster
    if partition is not None:
        cluster = dataclasses.replace(cluster, partition=partition)
    extra = set(preempted)
    if extra:
        allocations = tuple(
            dataclasses.replace(a, preempted=True) if a.key in extra and not a.preempted else a
            for a in cluster.allocations
        )
        cluster = dataclasses.replace(cluster, allocations=allocations)
    return cluster


def _cluster_from_rows(snapshot: models.ClusterSnapshot) -> em.Cluster:
    """Build the engine's Cluster from a stored snapshot's rows and spans (no JSON round trip)."""
    # tuples, not model instances: a large snapshot has tens of thousands of rows
    queues = list(
        snapshot.queues.order_by("path").values_list(
            "path",
            "name",
            "parent_path",
            "guaranteed",
            "max",
            "properties",
            "quota_preemption_delay",
        )
    )
    if not queues:
        raise ServiceError("snapshot", f"snapshot {snapshot.pk} has no queues")
    children: dict[str, list[em.QueueConfig]] = {}
    built: dict[str, em.QueueConfig] = {}
    # reverse path order visits children before their parent
    for path, name, parent_path, guaranteed, max_, properties, delay in reversed(queues):
        kids = tuple(sorted(children.get(path, ()), key=lambda c: c.name))
        cfg = em.QueueConfig(
            name=name,
            guaranteed=guaranteed,
            max=max_,
            properties=dict(properties or {}),
            quota_preemption_delay=delay,
            children=kids,
        )
        built[path] = cfg
        if parent_path:
            children.setdefault(parent_path, []).append(cfg)
    root = built["root"]
    nodes = engine_nodes(snapshot)
    allocations = engine_allocations(snapshot)
    partition = snapshot_partition(snapshot)
    return em.Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)


def snapshot_partition(snapshot: models.ClusterSnapshot) -> em.Partition:
    """The partition settings stored with a snapshot (without loading its whole scenario)."""
    if "scenario" in snapshot.__dict__:  # already loaded: free
        raw: object = snapshot.scenario.get("partition")
    else:
        raw = (
            models.ClusterSnapshot.objects.filter(pk=snapshot.pk)
            .values_list("scenario__partition", flat=True)
            .first()
        )
    settings_ = raw if isinstance(raw, dict) else {}
    return em.Partition(
        quota_preemption_enabled=bool(settings_.get("quota_preemption_enabled", False)),
        miss=float(settings_.get("miss", 0.0)),
    )


def ask_from_row(row: models.PendingAsk) -> em.Ask:
    return em.Ask(
        key=row.key,
        queue=row.queue,
        resources=dict(row.resources),
        app=row.app,
        priority=row.priority,
        allow_preempt_other=row.allow_preempt_other,
        created=row.created,
    )


def snapshot_now(snapshot: models.ClusterSnapshot) -> float:
    """The engine's ``now`` for a snapshot: its own ``now`` or its capture time.

    Like :func:`snapshot_partition`, without loading the whole stored scenario when
    the row was read without it.
    """
    if "scenario" in snapshot.__dict__:  # already loaded: free
        raw: object = snapshot.scenario.get("now")
    else:
        raw = (
            models.ClusterSnapshot.objects.filter(pk=snapshot.pk)
            .values_list("scenario__now", flat=True)
            .first()
        )
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    return epoch(snapshot.captured_at)


def scenario_document(
    snapshot: models.ClusterSnapshot, request: Mapping[str, object] | None = None
) -> dict[str, object]:
    """A scenario JSON for ``python -m engine``: the stored cluster plus *request*."""
    doc = cluster_to_dict(cluster_from_snapshot(snapshot))
    doc["now"] = snapshot_now(snapshot)
    if request is not None:
        doc["request"] = dict(request)
    return doc


def export_request(
    snapshot: models.ClusterSnapshot, *, ask: str | None = None, quota: str | None = None
) -> dict[str, object]:
    """The request part of an exported scenario: ``--ask KEY`` or ``--quota QUEUE=MAX``.

    Without either, a ``resources`` request for root (any engine request needs one).
    """
    if ask and quota:
        raise ServiceError("ask", "give either ask or quota, not both")
    if ask:
        row = snapshot.asks.filter(key=ask).first()
        if row is None:
            raise ServiceError("ask", f"no pending ask {ask!r} in snapshot {snapshot.pk}")
        return {
            "type": "preempt",
            "ask": {
                "key": row.key,
                "app": row.app,
                "queue": row.queue,
                "resources": dict(row.resources),
                "priority": row.priority,
                "allow_preempt_other": row.allow_preempt_other,
                "created": row.created,
            },
        }
    if quota:
        queue, sep, raw = quota.partition("=")
        if not sep:
            raise ServiceError("quota", 'use QUEUE=JSON, e.g. root.a={"vcore": 8000}')
        try:
            new_max = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as exc:
            raise ServiceError("quota", f"the new max is not JSON: {exc.msg}") from exc
        new_max = validate_resource(new_max, "quota")
        if not snapshot.queues.filter(path=queue).exists():
            raise ServiceError("quota", f"unknown queue {queue!r} in snapshot {snapshot.pk}")
        return {"type": "quota_change", "queue": queue, "new_max": new_max}
    return {"type": "resources", "queue": "root"}
