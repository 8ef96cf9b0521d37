"""REST API of the cluster sources: sources, snapshot comparison, a change's config patch.

- ``/api/sources/`` - cluster sources: reads for staff and readers of every queue,
  writes for staff (the project's default, ``dashboard.access.api.QueueAclPermission``).
  The token is write-only: it is accepted on create/update (omit it to keep the
  stored one, send ``""`` to clear it) and answered only as ``token_state`` =
  ``"set"`` / ``"not set"``.
  ``POST /api/sources/<id>/poll/`` polls now (staff); ``GET .../snapshots/``
  lists the snapshots its polls stored.
- ``/api/snapshots/<a>/compare/<b>/`` - what changed from snapshot a to b.
- ``/api/quota-changes/<id>/config/`` - ``{"queues_yaml", "configmap",
  "kubectl_patch", ...}`` for a change of a partition with a source.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import compare, configpatch, services
from dashboard.sources.addresses import AddressRefused, check_url, policy_from_settings
from dashboard.sources.client import check_base_url
from dashboard.sources.faults import is_stale
from dashboard.sources.models import ClusterSource, SourceSnapshot

STALE = "stale"
#: the API's ``status``: the stored states, and "stale" for a healthy one whose polls stopped
SOURCE_STATUSES = [*ClusterSource.Status.values, STALE]

STATE_FIELDS = [
    "status",
    "stale",
    "failing_since",
    "last_error",
    "last_error_at",
    "consecutive_failures",
    "last_success_at",
    "last_poll_at",
    "last_changed_at",
    "last_snapshot",
    "alerted",
    "next_poll_at",
    "events_instance",
    "events_next",
    "last_events_error",
    "last_full_poll_at",
    "last_cycle",
    "config_checksum",
    "config_seen_at",
    "last_config_error",
    "scheduler_health",
    "scheduler_unhealthy_since",
    "created_at",
    "updated_at",
]


class ClusterSourceSerializer(serializers.ModelSerializer[ClusterSource]):
    cluster = serializers.CharField(
        source="cluster.name",
        required=False,
        max_length=200,
        help_text="the dashboard cluster its snapshots go to (made when new); "
        "default the only cluster",
    )
    token = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=True,
        max_length=8192,
        help_text="bearer token (write-only): omit to keep, empty string to clear",
    )
    token_state = serializers.CharField(read_only=True, help_text='"set" or "not set"')
    alerted = serializers.SerializerMethodField()
    stale = serializers.SerializerMethodField(
        help_text="no poll finished for two poll intervals (a dead worker, a held lease)"
    )
    status = serializers.SerializerMethodField(
        help_text='"new" (not polled yet), "healthy", "failing" (the last poll failed) or '
        '"stale": the last poll succeeded but no poll finished for two poll intervals since '
        "(stale is true), so nothing vouches that the source is healthy now"
    )

    class Meta:
        model = ClusterSource
        fields = [
            "id",
            "name",
            "base_url",
            "cluster",
            "partition",
            "token",
            "token_state",
            "use_state_dump",
            "verify_tls",
            "poll_interval",
            "enabled",
            "follow_stream",
            "reconcile_interval",
            "alert_after",
            "namespace",
            "configmap_name",
            *STATE_FIELDS,
        ]
        read_only_fields = STATE_FIELDS

    def get_alerted(self, obj: ClusterSource) -> bool:
        """Whether the current failing streak has raised its alert."""
        return obj.alerted_at is not None

    def get_stale(self, obj: ClusterSource) -> bool:
        return is_stale(obj, platform.utcnow())

    @extend_schema_field(serializers.ChoiceField(choices=SOURCE_STATUSES))
    def get_status(self, obj: ClusterSource) -> str:
        if obj.status == ClusterSource.Status.HEALTHY and self.get_stale(obj):
            return STALE
        return str(obj.status)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        named = attrs.get("cluster", {}).get("name")
        if named is not None:
            try:
                platform.check_cluster_name(named)
            except platform.ServiceError as exc:
                raise serializers.ValidationError({"cluster": [exc.message]}) from None
            cluster: str | None = named
        elif self.instance is not None:
            cluster = self.instance.cluster.name
        else:
            names = list(dm.Cluster.objects.order_by("name").values_list("name", flat=True))
            if len(names) > 1:
                raise serializers.ValidationError(
                    {"cluster": [f"there are several clusters ({', '.join(names)}): name one"]}
                )
            cluster = names[0] if names else None
        partition = attrs.get("partition", self.instance.partition if self.instance else "default")
        taken = ClusterSource.objects.filter(cluster__name=cluster, partition=partition)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if cluster is not None and taken.exists():
            raise serializers.ValidationError(
                {"partition": [f"cluster {cluster} already has a source for partition {partition}"]}
            )
        return attrs

    def _with_cluster(self, validated_data: dict[str, Any]) -> dict[str, Any]:
        named = validated_data.pop("cluster", {}).get("name")
        if named is not None:
            validated_data["cluster"] = platform.import_cluster(named)
        elif self.instance is None:
            validated_data["cluster"] = platform.import_cluster(None)
        return validated_data

    def create(self, validated_data: dict[str, Any]) -> ClusterSource:
        with transaction.atomic():
            return super().create(self._with_cluster(validated_data))

    def update(self, instance: ClusterSource, validated_data: dict[str, Any]) -> ClusterSource:
        with transaction.atomic():
            return super().update(instance, self._with_cluster(validated_data))

    def validate_base_url(self, value: str) -> str:
        try:
            url = check_base_url(value)
            check_url(url, policy_from_settings())
        except (ValueError, AddressRefused) as exc:
            raise serializers.ValidationError(f"base URL {exc}") from None
        return url

    def validate_token(self, value: str) -> str:
        if any(not c.isprintable() or c.isspace() for c in value):
            raise serializers.ValidationError(
                "the token must not contain spaces, line breaks or control characters"
            )
        return value


class SourceSnapshotSerializer(serializers.ModelSerializer[SourceSnapshot]):
    captured_at = serializers.DateTimeField(source="snapshot.captured_at", read_only=True)

    class Meta:
        model = SourceSnapshot
        fields = ["snapshot", "captured_at", "fetched_at", "fingerprint"]


class ClusterSourceFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")

    class Meta:
        model = ClusterSource
        fields = ["enabled", "status", "cluster", "partition"]


class ClusterSourceViewSet(viewsets.ModelViewSet[ClusterSource]):
    """Live YuniKorn schedulers the dashboard polls (staff edit; tokens never shown)."""

    queryset = ClusterSource.objects.select_related("cluster")
    serializer_class = ClusterSourceSerializer
    filterset_class = ClusterSourceFilter
    ordering_fields = ["name", "last_poll_at", "status"]

    def perform_create(self, serializer: serializers.BaseSerializer[ClusterSource]) -> None:
        serializer.save()

    def perform_update(self, serializer: serializers.BaseSerializer[ClusterSource]) -> None:
        changed = set(serializer.validated_data)
        source = serializer.save()
        services.source_saved(source, changed)

    @extend_schema(request=None, responses={202: ClusterSourceSerializer})
    @action(detail=True, methods=["post"])
    def poll(self, request: Request, pk: str | None = None) -> Response:
        """Poll this source now (even when not due); the answer is its state when queued."""
        from dashboard.sources.tasks import poll_cluster_source

        source = self.get_object()
        source_id = source.pk
        transaction.on_commit(lambda: poll_cluster_source.delay(source_id, True))
        return Response(self.get_serializer(source).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: SourceSnapshotSerializer(many=True)})
    @action(detail=True, methods=["get"], filterset_class=None)
    def snapshots(self, request: Request, pk: str | None = None) -> Response:
        """The snapshots this source's polls stored, newest first."""
        source = self.get_object()
        qs = (
            SourceSnapshot.objects.filter(source=source)
            .select_related("snapshot")
            .order_by("-fetched_at", "-id")
        )
        paginator = self.paginator
        page = paginator.paginate_queryset(qs, request, view=self) if paginator else None
        rows = SourceSnapshotSerializer(page if page is not None else qs, many=True).data
        if paginator is not None and page is not None:
            return paginator.get_paginated_response(rows)
        return Response(rows)


class SnapshotCompareView(APIView):
    """What changed between two snapshots of one cluster (queues, allocations, asks, nodes)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, a: int, b: int) -> Response:
        first = get_object_or_404(dm.ClusterSnapshot.objects.select_related("partition"), pk=a)
        second = get_object_or_404(dm.ClusterSnapshot.objects.select_related("partition"), pk=b)
        result: dict[str, Any] = compare.compare_snapshots(first, second)
        return Response(result)


class ChangeConfigView(APIView):
    """The YuniKorn config for a quota change: queues.yaml, ConfigMap and kubectl patch."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, pk: int) -> Response:
        change = get_object_or_404(dm.QuotaChange.objects.select_related("partition"), pk=pk)
        return Response(configpatch.change_config(change).to_dict())
