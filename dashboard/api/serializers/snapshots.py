"""Serializers of cluster snapshots, an upload, and their queue, node, allocation, ask
and application rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard import models, services
from dashboard.api.serializers.fields import PodNames, ResourceField


class SnapshotSerializer(serializers.ModelSerializer[models.ClusterSnapshot]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    imported_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    counts = serializers.SerializerMethodField()

    class Meta:
        model = models.ClusterSnapshot
        fields = [
            "id",
            "cluster",
            "partition",
            "source_kind",
            "source_detail",
            "captured_at",
            "imported_at",
            "imported_by",
            "warnings",
            "checksum",
            "counts",
        ]

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_counts(self, obj: models.ClusterSnapshot) -> dict[str, int]:
        return {
            "queues": obj.queues.count(),
            "nodes": services.snapshot_nodes(obj).count(),
            "allocations": services.snapshot_allocations(obj).count(),
            "asks": obj.asks.count(),
            "applications": services.snapshot_applications(obj).count(),
        }


class SnapshotUploadSerializer(serializers.Serializer[Any]):
    files = serializers.ListField(
        child=serializers.FileField(),
        help_text=(
            "a scenario JSON, one YuniKorn REST file, several REST files, or a full state dump"
        ),
    )
    cluster = serializers.CharField(
        required=False,
        max_length=200,
        help_text="the cluster to store it in (made when new); default the answers' clusterId, "
        "else the only cluster",
    )
    partition = serializers.CharField(required=False)
    captured_at = serializers.DateTimeField(
        required=False,
        help_text="when REST answers (which carry no capture time) were fetched, ISO 8601 "
        "with its offset; default the import time; refused for answers carrying their own",
    )


class SnapshotQueueSerializer(serializers.ModelSerializer[models.SnapshotQueue]):
    """One queue with YuniKorn's figures named as the scheduler names them.

    ``allocated`` is ``allocatedResource`` as reported (allocations being
    preempted still count), ``preempting`` the part being preempted, and
    ``remaining`` = allocated - preempting over every allocated type (0 where all
    of it is being preempted); ``usage`` is the same remaining figure as the
    engine computes it, without the zero types.
    """

    guaranteed = ResourceField(allow_null=True)
    max = ResourceField(allow_null=True)
    allocated = ResourceField(help_text="allocatedResource as YuniKorn reports it")
    preempting = ResourceField(help_text="preemptingResource: the part being preempted")
    remaining = ResourceField(
        read_only=True, help_text="allocated - preempting, every allocated type kept"
    )
    usage = ResourceField(help_text="the engine's usage: allocated - preempting, zeros dropped")
    pending = ResourceField()
    max_applications = serializers.IntegerField(
        allow_null=True, help_text="maxapplications (maxRunningApps); null when unlimited"
    )
    running_applications = serializers.IntegerField(
        source="running_apps", allow_null=True, help_text="runningApps; null when not reported"
    )

    class Meta:
        model = models.SnapshotQueue
        fields = [
            "path",
            "name",
            "parent_path",
            "depth",
            "is_leaf",
            "status",
            "dynamic",
            "guaranteed",
            "max",
            "allocated",
            "preempting",
            "remaining",
            "usage",
            "pending",
            "max_applications",
            "running_applications",
            "properties",
            "quota_preemption_delay",
        ]


class SnapshotNodeSerializer(serializers.ModelSerializer[models.NodeSpan]):
    """One node: capacity as reported, what non-YuniKorn pods occupy, what YuniKorn can use."""

    reported_capacity = ResourceField(help_text="the node's capacity as YuniKorn reports it")
    occupied = ResourceField(help_text="what pods not scheduled by YuniKorn hold")
    capacity = ResourceField(help_text="reported capacity - occupied: what YuniKorn can allocate")
    allocated = ResourceField(help_text="YuniKorn allocations on the node (preempted included)")

    class Meta:
        model = models.NodeSpan
        fields = [
            "node_id",
            "reported_capacity",
            "occupied",
            "foreign_pods",
            "capacity",
            "allocated",
            "schedulable",
        ]


class _AllocationsNamed(serializers.ListSerializer[models.AllocationSpan]):
    """A list of allocations whose applications' users are read with one query."""

    def to_representation(self, data: Any) -> list[Any]:
        items = list(data.all() if hasattr(data, "all") else data)
        snapshot = self.context.get("snapshot")
        if isinstance(snapshot, models.ClusterSnapshot):
            self.context["names"] = services.allocation_names(snapshot, (a.key for a in items))
        return super().to_representation(items)


class SnapshotAllocationSerializer(PodNames, serializers.ModelSerializer[models.AllocationSpan]):
    """An allocation of a snapshot; ``namespace``/``pod`` name its pod (from its tags,
    empty when unknown) and ``user`` its application's user."""

    resources = ResourceField()
    pod = serializers.SerializerMethodField(help_text="its pod's name (empty when unknown)")
    namespace = serializers.SerializerMethodField(help_text="its pod's namespace")
    user = serializers.SerializerMethodField(help_text="its application's user")

    class Meta:
        model = models.AllocationSpan
        list_serializer_class = _AllocationsNamed
        fields = [
            "key",
            "app",
            "queue",
            "node",
            "resources",
            "priority",
            "originator",
            "allow_preemption",
            "required_node",
            "preempted",
            "created",
            "placeholder",
            "placeholder_used",
            "task_group",
            "pod",
            "namespace",
            "user",
        ]

    def get_user(self, obj: models.AllocationSpan) -> str:
        names = self.context.get("names")
        found = names.get(obj.key) if isinstance(names, Mapping) else None
        return found.user if isinstance(found, services.AllocationName) else ""


class PendingAskSerializer(PodNames, serializers.ModelSerializer[models.PendingAsk]):
    """An ask not yet allocated; ``namespace``/``pod`` name its pod (from its tags, empty
    when unknown), as an allocation's do."""

    resources = ResourceField()
    pod = serializers.SerializerMethodField(help_text="its pod's name (empty when unknown)")
    namespace = serializers.SerializerMethodField(help_text="its pod's namespace")

    class Meta:
        model = models.PendingAsk
        fields = [
            "key",
            "app",
            "queue",
            "resources",
            "priority",
            "allow_preempt_other",
            "created",
            "pod",
            "namespace",
        ]


class SnapshotApplicationSerializer(serializers.ModelSerializer[models.ApplicationSpan]):
    class Meta:
        model = models.ApplicationSpan
        fields = ["app_id", "queue", "state", "used", "pending"]
