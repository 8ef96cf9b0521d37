"""API serializers: read shapes of the stored rows and the input shapes of the writes.

Writes are validated here only for shape; the services validate meaning (known
queue, resource quantities, timer rules) and name the offending field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard import display, models, services
from dashboard.services.quota.deadlines import describe as describe_deadline

RESOURCE_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "integer", "minimum": 0},
    "nullable": True,
    "description": "resource type -> quantity (vcore in millicores, memory in bytes)",
}


@extend_schema_field(RESOURCE_SCHEMA)
class ResourceField(serializers.JSONField):
    """A ``{type: int}`` object (``null`` = not set)."""


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
            "applied_at",
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


class SnapshotAllocationSerializer(serializers.ModelSerializer[models.AllocationSpan]):
    resources = ResourceField()

    class Meta:
        model = models.AllocationSpan
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
        ]


class PendingAskSerializer(serializers.ModelSerializer[models.PendingAsk]):
    resources = ResourceField()

    class Meta:
        model = models.PendingAsk
        fields = ["key", "app", "queue", "resources", "priority", "allow_preempt_other", "created"]


class SnapshotApplicationSerializer(serializers.ModelSerializer[models.ApplicationSpan]):
    class Meta:
        model = models.ApplicationSpan
        fields = ["app_id", "queue", "state", "used", "pending"]


class RunVictimSerializer(serializers.ModelSerializer[models.RunVictim]):
    """One victim; ``placeholder`` and ``task_group`` come from the run's snapshot."""

    resources = ResourceField()
    placeholder = serializers.SerializerMethodField(
        help_text="a gang-scheduling placeholder in the run's snapshot"
    )
    task_group = serializers.SerializerMethodField(help_text="its gang's task group, if any")

    class Meta:
        model = models.RunVictim
        fields = [
            "position",
            "allocation_key",
            "ask",
            "app",
            "queue",
            "leaf",
            "node",
            "resources",
            "placeholder",
            "task_group",
        ]

    def _gang(self, obj: models.RunVictim) -> Mapping[str, object]:
        gang = self.context.get("gang")
        if gang is None:  # a victim serialized on its own: look up its run's snapshot
            gang = services.gang_allocations(obj.run.snapshot, [obj.allocation_key])
        found = gang.get(obj.allocation_key) if isinstance(gang, Mapping) else None
        return found if isinstance(found, Mapping) else {}

    def get_placeholder(self, obj: models.RunVictim) -> bool:
        return self._gang(obj).get("placeholder") is True

    def get_task_group(self, obj: models.RunVictim) -> str:
        return str(self._gang(obj).get("task_group") or "")


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
    outcome_text = serializers.SerializerMethodField(
        help_text="the outcome in words after the run's nature: a what-if's or a predicted "
        "run's 'enforced' is 'target claimed in full' (nothing happened in the cluster); "
        "``outcome`` keeps the engine's value"
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
            "outcome_text",
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

    def get_outcome_text(self, obj: models.PreemptionRun) -> str:
        return display.outcome_with_nature(obj.get_nature_display(), obj.outcome or obj.status)

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

    def to_representation(self, instance: models.PreemptionRun) -> dict[str, Any]:
        # one query for the gang facts of every victim (read by RunVictimSerializer)
        self.context["gang"] = services.gang_allocations(instance.snapshot)
        return super().to_representation(instance)

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
    clock_source_text = serializers.CharField(
        source="get_clock_source_display",
        read_only=True,
        help_text="where changed_at (the timer's start) comes from, in words",
    )
    planned = serializers.BooleanField(
        source="is_planned",
        read_only=True,
        help_text="made in the dashboard and not yet seen applied in the cluster's config: "
        "its timer is the dashboard's prediction",
    )
    deadline_reason_text = serializers.SerializerMethodField(
        help_text="which rule of the partition's timer rule set made the deadline, in words"
    )

    def get_deadline_reason_text(self, obj: models.QuotaChange) -> str:
        return describe_deadline(obj)

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
            "clock_source",
            "clock_source_text",
            "clock_detail",
            "planned",
            "learned",
            "applied_at",
            "deadline",
            "deadline_reason",
            "deadline_reason_text",
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
