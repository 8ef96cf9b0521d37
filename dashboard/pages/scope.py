"""The cluster, partition and snapshot a page shows, taken from the URL (deep links).

Every page reads ``?cluster=<name>&partition=<name>&snapshot=<id>`` and falls
back to the partition with the newest snapshot (of the cluster, when one is
named) and that partition's newest snapshot when they are absent; a partition
named without its cluster is the one partition so named.  A cluster, partition
or snapshot that is named but does not exist (or a snapshot of another
partition, or a partition name several clusters share) is a *problem*: the
pages answer it with a 404 instead of silently showing other data.  Pages of one object (a run, a
change, a config version) pin the scope to that object's partition with
:func:`pin`.  The resolved scope is computed once per request and shared by the
view and the navigation context processor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.http import HttpRequest

from dashboard.models import Cluster, ClusterSnapshot, Partition

_CACHE_ATTR = "_pages_scope"
#: The whole stored scenario (megabytes for a big cluster): pages read the rows instead.
_HEAVY = ("scenario",)


@dataclass(frozen=True)
class Scope:
    """The cluster, partition and snapshot in view, and the choices for the switchers."""

    partition: Partition | None
    snapshot: ClusterSnapshot | None
    partitions: list[Partition] = field(default_factory=list)
    snapshots: list[ClusterSnapshot] = field(default_factory=list)
    is_latest: bool = True
    #: Why the URL's scope cannot be shown (unknown partition or snapshot), else None.
    problem: str | None = None
    clusters: list[Cluster] = field(default_factory=list)

    @property
    def cluster(self) -> Cluster | None:
        return self.partition.cluster if self.partition is not None else None

    def params(self) -> dict[str, str]:
        """The query parameters that pin this scope in a link."""
        out: dict[str, str] = {}
        if self.partition is not None:
            out["cluster"] = self.partition.cluster.name
            out["partition"] = self.partition.name
        if self.snapshot is not None:
            out["snapshot"] = str(self.snapshot.pk)
        return out

    def query(self, **extra: object) -> str:
        """``cluster=..&partition=..&snapshot=..`` plus *extra* (``None`` values left out),
        url-encoded."""
        params: dict[str, str] = self.params()
        for key, value in extra.items():
            if value is not None and value != "":
                params[key] = str(value)
        return urlencode(params)


def _int(value: str | None) -> int | None:
    if value is None or not value.isdigit():
        return None
    return int(value)


def resolve(request: HttpRequest) -> Scope:
    """The scope named by *request*'s query string, with fallbacks (cached on the request)."""
    cached = getattr(request, _CACHE_ATTR, None)
    if isinstance(cached, Scope):
        return cached
    every = _every_partition()
    clusters = _clusters(every)
    problem: str | None = None
    asked_cluster = request.GET.get("cluster")
    cluster = next((c for c in clusters if c.name == asked_cluster), None)
    if asked_cluster and cluster is None:  # a cluster with no partition yet
        cluster = Cluster.objects.filter(name=asked_cluster).first()
    if asked_cluster and cluster is None:
        problem = f"There is no cluster named {asked_cluster!r}."
    asked_partition = request.GET.get("partition")
    partition: Partition | None = None
    if asked_partition and problem is None:
        named = [
            p
            for p in every
            if p.name == asked_partition and (cluster is None or p.cluster_id == cluster.pk)
        ]
        if len(named) == 1:
            partition = named[0]
        elif not named:
            where = f" in cluster {cluster.name!r}" if cluster is not None else ""
            problem = f"There is no partition named {asked_partition!r}{where}."
        else:
            problem = (
                f"Partition {asked_partition!r} exists in clusters "
                f"{', '.join(p.cluster.name for p in named)}: choose the cluster."
            )
    asked_snapshot = request.GET.get("snapshot")
    snapshot_id = _int(asked_snapshot)
    snapshot: ClusterSnapshot | None = None
    if asked_snapshot and snapshot_id is None:
        problem = problem or f"Snapshot {asked_snapshot!r} is not a snapshot number."
    if snapshot_id is not None:
        snapshot = (
            ClusterSnapshot.objects.select_related("partition__cluster")
            .defer(*_HEAVY)
            .filter(pk=snapshot_id)
            .first()
        )
        if snapshot is None:
            problem = problem or f"There is no snapshot {snapshot_id}."
        elif partition is not None and snapshot.partition_id != partition.pk:
            problem = problem or (
                f"Snapshot {snapshot_id} belongs to partition {snapshot.partition.name!r}, "
                f"not {partition.name!r}."
            )
            snapshot = None
        elif cluster is not None and snapshot.partition.cluster_id != cluster.pk:
            problem = problem or (
                f"Snapshot {snapshot_id} belongs to cluster "
                f"{snapshot.partition.cluster.name!r}, not {cluster.name!r}."
            )
            snapshot = None
        if snapshot is not None:
            partition = snapshot.partition
    if partition is None:
        newest = (
            ClusterSnapshot.objects.select_related("partition__cluster")
            .defer(*_HEAVY)
            .order_by("-captured_at", "-id")
        )
        in_cluster = [p for p in every if cluster is None or p.cluster_id == cluster.pk]
        if cluster is not None:
            newest = newest.filter(partition__cluster=cluster)
        first = newest.first()
        partition = first.partition if first is not None else next(iter(in_cluster), None)
    scope = _build(partition, snapshot, every, problem)
    setattr(request, _CACHE_ATTR, scope)
    return scope


def pin(
    request: HttpRequest, partition: Partition, snapshot: ClusterSnapshot | None = None
) -> Scope:
    """Make *partition* (and *snapshot*, else its newest) the request's scope.

    A page about one object of a partition (a run, a change, a config version)
    shows that partition in the top bar and keeps it in every menu link,
    whatever the query string says.
    """
    scope = _build(partition, snapshot, _every_partition(), None)
    setattr(request, _CACHE_ATTR, scope)
    return scope


def _every_partition() -> list[Partition]:
    """Every partition with its cluster, in one query (the switchers' choices)."""
    return list(Partition.objects.select_related("cluster").order_by("cluster__name", "name"))


def _clusters(every: list[Partition]) -> list[Cluster]:
    seen: dict[int, Cluster] = {}
    for p in every:
        seen.setdefault(p.cluster_id, p.cluster)
    return list(seen.values())


def _build(
    partition: Partition | None,
    snapshot: ClusterSnapshot | None,
    every: list[Partition],
    problem: str | None,
) -> Scope:
    snapshots: list[ClusterSnapshot] = []
    partitions: list[Partition] = []
    clusters = _clusters(every)
    if partition is not None:
        # the switcher lists the partitions of the cluster in view
        partitions = [p for p in every if p.cluster_id == partition.cluster_id]
        snapshots = list(
            ClusterSnapshot.objects.filter(partition=partition)
            .only("id", "captured_at", "imported_at", "source_kind", "partition_id", "checksum")
            .order_by("-captured_at", "-id")[:50]
        )
        for item in snapshots:  # the partition is known: no query per snapshot.partition
            item.partition = partition
        if snapshot is not None and all(s.pk != snapshot.pk for s in snapshots):
            snapshots.append(snapshot)  # an old snapshot beyond the newest 50 stays selectable
        if snapshot is None and snapshots:
            snapshot = snapshots[0]
    is_latest = snapshot is None or not snapshots or snapshots[0].pk == snapshot.pk
    return Scope(partition, snapshot, partitions, snapshots, is_latest, problem, clusters)
