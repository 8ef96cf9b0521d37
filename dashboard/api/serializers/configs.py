"""Serializers of config versions: their queues, an upload, an import job, a diff."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from dashboard import models
from dashboard.api.serializers.fields import AnyValueField, ResourceField


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
