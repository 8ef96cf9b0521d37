"""Serializers of the administrator alert feed."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from dashboard import models
from dashboard.api.serializers.fields import tenant_text


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

    def to_representation(self, instance: models.Alert) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["message"] = tenant_text(self.context, instance, instance.message)
        return data


class UnreadCountSerializer(serializers.Serializer[Any]):
    unread = serializers.IntegerField()
