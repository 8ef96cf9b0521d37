"""Clusters and their partitions: what everything stored belongs to."""

from __future__ import annotations

from django.db import models

#: The cluster made for data that names none, while no cluster exists yet.
DEFAULT_CLUSTER = "default"


class AmbiguousCluster(Exception):
    """Several clusters exist and none was named."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"there are {len(names)} clusters ({', '.join(names)}): name the cluster")
        self.names = names


class ClusterManager(models.Manager["Cluster"]):
    def only_one(self) -> Cluster:
        """The only cluster, made as ``default`` while there is none.

        Raises:
            AmbiguousCluster: several clusters exist.
        """
        names = list(self.order_by("name").values_list("name", flat=True)[:21])
        if len(names) > 1:
            raise AmbiguousCluster(names)
        if names:
            return self.get(name=names[0])
        cluster, _ = self.get_or_create(name=DEFAULT_CLUSTER)
        return cluster


class Cluster(models.Model):
    """A YuniKorn scheduler's cluster: its partitions, and through them everything stored.

    ``name`` is what the dashboard calls it (the scheduler's ``clusterId`` or a name
    the administrator gives); ``cluster_id`` is the ``clusterId`` its REST answers
    carry, learnt from the first snapshot that names one.
    """

    name = models.CharField(max_length=200, unique=True)
    cluster_id = models.CharField(
        max_length=200, blank=True, default="", help_text="YuniKorn's clusterId, when known"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ClusterManager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Partition(models.Model):
    """A scheduler partition (YuniKorn ``partitions[].name``) of one cluster."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="partitions")
    name = models.CharField(max_length=200)
    quota_preemption_enabled = models.BooleanField(default=False)
    miss = models.FloatField(default=0.0)
    timer_rules = models.CharField(
        max_length=10,
        choices=[
            ("scheduler", "scheduler: yunikorn-core's timer rules (engine.md 5.1)"),
            ("seed", "seed: the design seed's timer rules (engine.md 5)"),
        ],
        default="scheduler",
        help_text="the rules every quota preemption deadline of the partition follows",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="partition_name_per_cluster"),
        ]

    def __str__(self) -> str:
        return self.name
