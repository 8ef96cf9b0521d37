"""Which cluster and partition an import goes to, and which ones a request names.

A cluster is named by the administrator (``--cluster``, an upload's ``cluster``
field, a source's cluster) or by the scheduler (the ``clusterId`` of its REST
answers).  What names no cluster goes to the only cluster (``default``, made on
first use); with several clusters it must name one.  A cluster made for data that
named none (``default``, or one left by the migration) learns the scheduler's
``clusterId`` from the first snapshot that carries one, as does a cluster the
administrator named; from then on answers of another ``clusterId`` are refused
there (two schedulers' states never mix in one cluster).
"""

from __future__ import annotations

from django.db.models import QuerySet

from dashboard import models
from dashboard.names import name_problem
from dashboard.plumbing.errors import ServiceError


def check_cluster_name(name: str, field: str = "cluster") -> str:
    """*name* when it is a cluster name by the one rule for names (:mod:`dashboard.names`):
    letters, digits, '_', '.', '-' (at most 200)."""
    problem = name_problem("cluster", name)
    if problem is not None:
        raise ServiceError(field, problem)
    return name


def cluster_names() -> list[str]:
    return list(models.Cluster.objects.order_by("name").values_list("name", flat=True))


def _known() -> str:
    names = cluster_names()
    return ", ".join(names) if names else "none yet"


def import_cluster(
    name: str | None, *, cluster_id: str | None = None, field: str = "cluster"
) -> models.Cluster:
    """The cluster an import goes to (made when new). Call inside the import's transaction.

    Args:
        name: the cluster the administrator named, or None.
        cluster_id: the scheduler's ``clusterId`` of a snapshot's answers, or None.

    Raises:
        ServiceError: *field*, when no cluster is named, none is known by *cluster_id*
            and several clusters exist (the message lists them).
    """
    if name:
        cluster, _ = models.Cluster.objects.get_or_create(name=check_cluster_name(name, field))
    elif cluster_id:
        cluster = _by_scheduler_id(cluster_id)
    else:
        try:
            cluster = models.Cluster.objects.only_one()
        except models.AmbiguousCluster as exc:
            raise ServiceError(
                field,
                f"there are {len(exc.names)} clusters ({', '.join(exc.names)}): "
                "name the cluster to import into",
            ) from None
    if cluster_id and not cluster.cluster_id:
        cluster.cluster_id = cluster_id[:200]
        cluster.save(update_fields=["cluster_id"])
    elif cluster_id and cluster.cluster_id != cluster_id[:200]:
        raise ServiceError(
            field,
            f"the answers are of the scheduler with clusterId {cluster_id[:60]!r}, but "
            f"cluster {cluster.name!r} holds the state of clusterId {cluster.cluster_id!r}: "
            "import them into their own cluster",
        )
    return cluster


def _by_scheduler_id(cluster_id: str) -> models.Cluster:
    known = (
        models.Cluster.objects.filter(cluster_id=cluster_id).order_by("pk").first()
        or models.Cluster.objects.filter(name=cluster_id).first()
    )
    if known is not None:
        return known
    only = list(models.Cluster.objects.order_by("pk")[:2])
    if len(only) == 1 and not only[0].cluster_id and only[0].name == models.DEFAULT_CLUSTER:
        return only[0]  # the cluster made for data that named none learns its id
    name = cluster_id if name_problem("cluster", cluster_id) is None else models.DEFAULT_CLUSTER
    cluster, _ = models.Cluster.objects.get_or_create(name=name)
    return cluster


def import_partition(cluster: models.Cluster, name: str, **defaults: object) -> models.Partition:
    """The partition *name* of *cluster*, made with *defaults* when new."""
    row, _ = models.Partition.objects.get_or_create(cluster=cluster, name=name, defaults=defaults)
    return row


def named_cluster(name: str, field: str = "cluster") -> models.Cluster:
    """The stored cluster *name*.

    Raises:
        ServiceError: naming *field* and the clusters there are.
    """
    row = models.Cluster.objects.filter(name=name).first()
    if row is None:
        raise ServiceError(field, f"there is no cluster {name[:60]!r} (clusters: {_known()})")
    return row


def partitions_named(
    name: str | None, cluster: str | None, *, field: str = "cluster"
) -> QuerySet[models.Partition]:
    """Partitions matching a request's ``cluster`` and ``partition`` (either may be absent).

    Raises:
        ServiceError: an unknown cluster (naming the clusters there are).
    """
    qs = models.Partition.objects.select_related("cluster")
    if cluster:
        qs = qs.filter(cluster=named_cluster(cluster, field))
    if name:
        qs = qs.filter(name=name)
    return qs


def find_partition(
    name: str, cluster: str | None, *, field: str = "partition"
) -> models.Partition | None:
    """The partition *name* of *cluster*; without a cluster, the one partition so named.

    Returns None when there is none.

    Raises:
        ServiceError: an unknown cluster, or no cluster named while several clusters
            have a partition *name* (the message names them).
    """
    rows = list(partitions_named(name, cluster).order_by("cluster__name")[:21])
    if len(rows) > 1:
        raise ServiceError(
            "cluster",
            f"partition {name!r} exists in {len(rows)} clusters "
            f"({', '.join(r.cluster.name for r in rows)}): name the cluster",
        )
    return rows[0] if rows else None


def scope_label(partition: models.Partition) -> str:
    """``cluster/partition`` for messages that must tell clusters apart."""
    return f"{partition.cluster.name}/{partition.name}"
