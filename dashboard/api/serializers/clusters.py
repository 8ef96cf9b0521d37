"""Serializers of clusters and their partitions (with a partition's timer rule set)."""

from __future__ import annotations

from rest_framework import serializers

from dashboard import models


class ClusterSerializer(serializers.ModelSerializer[models.Cluster]):
    """A cluster: the name the dashboard knows it by, YuniKorn's clusterId, its partitions."""

    partitions = serializers.SerializerMethodField()

    class Meta:
        model = models.Cluster
        fields = ["id", "name", "cluster_id", "created_at", "partitions"]

    def get_partitions(self, obj: models.Cluster) -> list[str]:
        # prefetched by the view: one query for every cluster listed
        return sorted(p.name for p in obj.partitions.all())


class TimerRulesSerializer(serializers.Serializer[None]):
    timer_rules = serializers.ChoiceField(choices=["scheduler", "seed"])


class PartitionSerializer(serializers.ModelSerializer[models.Partition]):
    cluster = serializers.CharField(source="cluster.name", read_only=True)
    latest_config = serializers.SerializerMethodField()
    latest_snapshot = serializers.SerializerMethodField()

    class Meta:
        model = models.Partition
        fields = [
            "id",
            "cluster",
            "name",
            "quota_preemption_enabled",
            "miss",
            "timer_rules",
            "created_at",
            "latest_config",
            "latest_snapshot",
        ]

    def get_latest_config(self, obj: models.Partition) -> int | None:
        # the config in force: a version kept from a plan never is
        in_force = obj.configs.filter(planned=False).order_by("-number")
        return in_force.values_list("pk", flat=True).first()

    def get_latest_snapshot(self, obj: models.Partition) -> int | None:
        return obj.snapshots.order_by("-captured_at", "-id").values_list("pk", flat=True).first()
