"""API serializers: read shapes of the stored rows and the input shapes of the writes.

Writes are validated here only for shape; the services validate meaning (known
queue, resource quantities, timer rules) and name the offending field.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard import models, services

RESOURCE_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "integer", "minimum": 0},
    "nullable": True,
    "description": "resource type -> quantity (vcore in millicores, memory in bytes)",
}


@extend_schema_field(RESOURCE_SCHEMA)
class ResourceField(serializers.JSONField):
    """A ``{type: int}`` object (``null`` = not set)."""


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


class ConfigQueueSerializer(serializers.ModelSerializer[models.ConfigQueue]):
    guaranteed = ResourceField(allow_null=True)
    max = ResourceField(allow_null=True)

    class Meta:
        model = models.ConfigQueue
        fields = [
            "path",
            "name",
            "depth",
            "is_leaf",
            "is_parent_flag",
            "guaranteed",
            "max",
            "properties",
            "quota_preemption_delay",
        ]


class ConfigVersionSerializer(serializers.ModelSerializer[models.ConfigVersion]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    imported_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = models.ConfigVersion
        fields = [
            "id",
            "cluster",
            "partition",
            "number",
            "filename",
            "checksum",
            "quota_preemption_enabled",
            "warnings",
            "imported_by",
            "imported_at",
            "planned",
        ]


class ConfigVersionDetailSerializer(ConfigVersionSerializer):
    queues = ConfigQueueSerializer(many=True, read_only=True)

    class Meta(ConfigVersionSerializer.Meta):
        fields = [*ConfigVersionSerializer.Meta.fields, "text", "queues"]


class ConfigUploadSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(help_text="queues.yaml or a ConfigMap holding it")
    cluster = serializers.CharField(
        required=False,
        max_length=200,
        help_text="the cluster the config belongs to (made when new); default the only cluster",
    )
    partition = serializers.CharField(
        required=False, help_text="import only this partition of the file"
    )


class ImportJobSerializer(serializers.ModelSerializer[models.ImportJob]):
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = models.ImportJob
        fields = [
            "id",
            "kind",
            "filename",
            "cluster",
            "partition",
            "size",
            "status",
            "stage",
            "progress",
            "error",
            "versions",
            "changes",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class ConfigImportResultSerializer(serializers.Serializer[Any]):
    versions = ConfigVersionSerializer(many=True)
    changes = serializers.ListField(child=serializers.IntegerField())


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
            "nodes": obj.nodes.count(),
            "allocations": obj.allocations.count(),
            "asks": obj.asks.count(),
            "applications": obj.applications.count(),
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


class SnapshotQueueSerializer(serializers.ModelSerializer[models.SnapshotQueue]):
    guaranteed = ResourceField(allow_null=True)
    max = ResourceField(allow_null=True)
    usage = ResourceField()
    preempting = ResourceField()
    pending = ResourceField()

    class Meta:
        model = models.SnapshotQueue
        fields = [
            "path",
            "name",
            "parent_path",
            "depth",
            "is_leaf",
            "guaranteed",
            "max",
            "usage",
            "preempting",
            "pending",
            "properties",
            "quota_preemption_delay",
        ]


class SnapshotNodeSerializer(serializers.ModelSerializer[models.SnapshotNode]):
    capacity = ResourceField()
    allocated = ResourceField()

    class Meta:
        model = models.SnapshotNode
        fields = ["node_id", "capacity", "allocated", "schedulable"]


class SnapshotAllocationSerializer(serializers.ModelSerializer[models.SnapshotAllocation]):
    resources = ResourceField()

    class Meta:
        model = models.SnapshotAllocation
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
        ]


class PendingAskSerializer(serializers.ModelSerializer[models.PendingAsk]):
    resources = ResourceField()

    class Meta:
        model = models.PendingAsk
        fields = ["key", "app", "queue", "resources", "priority", "allow_preempt_other", "created"]


class SnapshotApplicationSerializer(serializers.ModelSerializer[models.SnapshotApplication]):
    class Meta:
        model = models.SnapshotApplication
        fields = ["app_id", "queue", "state", "used", "pending"]


class RunVictimSerializer(serializers.ModelSerializer[models.RunVictim]):
    resources = ResourceField()

    class Meta:
        model = models.RunVictim
        fields = ["position", "allocation_key", "ask", "app", "queue", "leaf", "node", "resources"]


class RunSerializer(serializers.ModelSerializer[models.PreemptionRun]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    victim_count = serializers.SerializerMethodField()
    nature = serializers.ChoiceField(
        choices=models.PreemptionRun.Nature.choices,
        read_only=True,
        help_text="what-if (asked for), predicted (the dashboard's own timers: nothing "
        "happened in the cluster) or observed (the scheduler's own preemption)",
    )
    predicted: serializers.PrimaryKeyRelatedField[models.PreemptionRun] = (
        serializers.PrimaryKeyRelatedField(
            read_only=True,
            allow_null=True,
            help_text="observed runs: the dashboard's run that predicted this enforcement",
        )
    )

    class Meta:
        model = models.PreemptionRun
        fields = [
            "id",
            "cluster",
            "partition",
            "snapshot",
            "kind",
            "trigger",
            "nature",
            "predicted",
            "status",
            "queue",
            "outcome",
            "claimed",
            "target",
            "alerts",
            "error",
            "attempts",
            "victim_count",
            "created_by",
            "queued_at",
            "started_at",
            "finished_at",
            "engine_ms",
        ]

    def get_victim_count(self, obj: models.PreemptionRun) -> int:
        # lists annotate it (one query for the page, not one per run)
        annotated = getattr(obj, "victim_total", None)
        return int(annotated) if annotated is not None else obj.victims.count()


class RunComparisonSerializer(serializers.Serializer[Any]):
    """An observed run's victims against those its prediction chose (allocation keys)."""

    predicted = serializers.IntegerField(help_text="the predicting run")
    agreed = serializers.BooleanField(help_text="both chose exactly the same victims")
    both = serializers.ListField(child=serializers.CharField())
    only_predicted = serializers.ListField(child=serializers.CharField())
    only_observed = serializers.ListField(child=serializers.CharField())


class RunDetailSerializer(RunSerializer):
    victims = RunVictimSerializer(many=True, read_only=True)
    comparison = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "request",
            "result",
            "idempotency_key",
            "victims",
            "comparison",
        ]

    @extend_schema_field(RunComparisonSerializer(allow_null=True))
    def get_comparison(self, obj: models.PreemptionRun) -> dict[str, Any] | None:
        cmp = services.compare(obj) if obj.predicted_id else None
        if cmp is None:
            return None
        return {
            "predicted": cmp.predicted.pk,
            "agreed": cmp.agreed,
            "both": list(cmp.both),
            "only_predicted": list(cmp.only_predicted),
            "only_observed": list(cmp.only_observed),
        }


class _RunInput(serializers.Serializer[Any]):
    snapshot = serializers.PrimaryKeyRelatedField(queryset=models.ClusterSnapshot.objects.all())
    idempotency_key = serializers.CharField(required=False, max_length=200)
    wait = serializers.BooleanField(
        default=False, help_text="evaluate in this request instead of a worker"
    )


class WhatIfPreemptSerializer(_RunInput):
    ask_key = serializers.CharField(required=False, help_text="a pending ask of the snapshot")
    ask = serializers.JSONField(required=False, help_text="a typed ask (scenario format)")


class WhatIfQuotaSerializer(_RunInput):
    queue = serializers.CharField()
    new_max = ResourceField(allow_null=True)


class RoundInputSerializer(_RunInput):
    ask_keys = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="default: every pending ask"
    )
    max_preempted = ResourceField(required=False, allow_null=True)


def parse_delay(value: object) -> float | None:
    """A delay as seconds (number) or a Go duration string (``5m``); ``None`` passes.

    The range is the one rule shared with the forms and the config hand-back
    (``services.checked_delay``): finite, 0 or 1ns to Go's longest duration.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise serializers.ValidationError("must be seconds or a duration such as 5m")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = services.delay_seconds(text)
            except services.ServiceError as exc:
                raise serializers.ValidationError(
                    f"{value!r} is not a duration (use seconds or e.g. 5m, 1h30m): {exc.message}"
                ) from None
    else:
        raise serializers.ValidationError("must be seconds or a duration such as 5m")
    try:
        return services.checked_delay(seconds)
    except services.ServiceError as exc:
        raise serializers.ValidationError(exc.message) from None


@extend_schema_field(
    {
        "oneOf": [
            {"type": "number", "minimum": 0, "maximum": services.MAX_DELAY_SECONDS},
            {"type": "string"},
        ],
        "nullable": True,
        "description": "seconds (0, or 1ns up to about 292 years) or a Go duration such as 5m",
    }
)
class DelayField(serializers.Field[float | None, object, object, Any]):
    """Seconds, or a Go duration string such as ``5m``."""

    def to_internal_value(self, data: object) -> float | None:
        return parse_delay(data)

    def to_representation(self, value: float | None) -> object:
        return value


class QuotaChangeSerializer(serializers.ModelSerializer[models.QuotaChange]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    old_max = ResourceField(allow_null=True)
    new_max = ResourceField(allow_null=True)

    class Meta:
        model = models.QuotaChange
        fields = [
            "id",
            "cluster",
            "partition",
            "queue_path",
            "cause",
            "old_max",
            "new_max",
            "old_delay",
            "new_delay",
            "delay",
            "state",
            "reason",
            "changed_at",
            "deadline",
            "started_at",
            "finished_at",
            "created_by",
            "config_version",
            "snapshot",
            "run",
            "superseded_by",
        ]
        read_only_fields = fields


class QuotaChangeInputSerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField(
        required=False, help_text="the partition's cluster (needed when several have one so named)"
    )
    partition = serializers.CharField(max_length=200)
    queue_path = serializers.CharField(max_length=1000)
    new_max = ResourceField(required=False, allow_null=True)
    new_delay = DelayField(required=False, allow_null=True)
    snapshot = serializers.PrimaryKeyRelatedField(
        queryset=models.ClusterSnapshot.objects.all(), required=False, allow_null=True
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "new_max" not in attrs and "new_delay" not in attrs:
            raise serializers.ValidationError({"new_max": ["give new_max and/or new_delay"]})
        row = services.find_partition(attrs["partition"], attrs.pop("cluster", None))
        if row is None:
            raise serializers.ValidationError(
                {"partition": [f"there is no partition {attrs['partition'][:60]!r}"]}
            )
        attrs["partition"] = row
        return attrs


class QuotaChangeEditSerializer(serializers.Serializer[Any]):
    new_max = ResourceField(required=False, allow_null=True)
    new_delay = DelayField(required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "new_max" not in attrs and "new_delay" not in attrs:
            raise serializers.ValidationError({"new_max": ["give new_max and/or new_delay"]})
        return attrs


class AlertSerializer(serializers.ModelSerializer[models.Alert]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    acknowledged_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = models.Alert
        fields = [
            "id",
            "level",
            "kind",
            "message",
            "cluster",
            "partition",
            "queue",
            "run",
            "change",
            "created_at",
            "count",
            "last_seen_at",
            "acknowledged_by",
            "acknowledged_at",
        ]
        read_only_fields = fields


class UnreadCountSerializer(serializers.Serializer[Any]):
    unread = serializers.IntegerField()


@extend_schema_field({"description": "the old or new value (null when absent)", "nullable": True})
class AnyValueField(serializers.JSONField):
    """Any JSON value."""


class ConfigChangeSerializer(serializers.Serializer[Any]):
    """One difference between two config versions (``GET /api/configs/{id}/diff/``)."""

    partition = serializers.CharField()
    queue = serializers.CharField(help_text="queue path; empty for a partition flag")
    field = serializers.CharField(
        help_text="queue, max, guaranteed, property, quota_preemption_delay, "
        "max_applications, partition or quota_preemption_enabled"
    )
    kind = serializers.ChoiceField(choices=["added", "removed", "changed"])
    old = AnyValueField()
    new = AnyValueField()
    key = serializers.CharField(help_text="the property's name (field property)")
    is_decrease = serializers.BooleanField()
    text = serializers.CharField(help_text="one readable line")
