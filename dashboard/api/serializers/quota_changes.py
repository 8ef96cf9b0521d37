"""Serializers of scheduled quota changes: the stored change, a new one, an edit."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from dashboard import models, services
from dashboard.api.serializers.fields import DelayField, ResourceField, tenant_text
from dashboard.services.quota.deadlines import describe as describe_deadline


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
        help_text="where changed_at (the change's time) comes from, in words",
    )
    planned = serializers.BooleanField(
        source="is_planned",
        read_only=True,
        help_text="made in the dashboard and not yet seen applied in the cluster's config: "
        "its timer is the dashboard's prediction",
    )
    timer_started_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="when the timer the deadline counts from started (deadline - delay): "
        "changed_at, unless the rule set kept an earlier start or a restart re-armed it",
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
            "timer_started_at",
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

    def to_representation(self, instance: models.QuotaChange) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["reason"] = tenant_text(self.context, instance, instance.reason)
        return data


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
