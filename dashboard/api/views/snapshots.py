"""API views of cluster snapshots: import, their row lists, the scenario export."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import models, services
from dashboard.api import serializers as s
from dashboard.api.caches import snapshot_rows_page
from dashboard.api.filtersets import SnapshotFilter
from dashboard.api.parsers import FormParser, JSONParser, MultiPartParser


def _uploaded(request: Request, field: str) -> dict[str, bytes]:
    """Uploaded files of *field* as name -> bytes, each within the upload limit."""
    out: dict[str, bytes] = {}
    for f in request.FILES.getlist(field):
        services.check_upload_size(f.name or field, f.size or 0)
        out[f.name or f"{field}{len(out)}"] = f.read()
    return out


def _aware_time(value: object, field: str) -> datetime | None:
    """An ISO 8601 time with its UTC offset from a form field (absent: None)."""
    if value in (None, ""):
        return None
    try:
        parsed = parse_datetime(str(value))
    except ValueError:  # well formed, out of range (month 13)
        parsed = None
    if parsed is None:
        raise services.ServiceError(field, f"{str(value)[:60]!r} is not an ISO 8601 time")
    if parsed.tzinfo is None:
        raise services.ServiceError(field, f"{str(value)[:60]!r} has no UTC offset: add Z")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise services.ServiceError(field, f"{str(value)[:60]!r} is out of range") from None


@extend_schema_view(
    create=extend_schema(
        request={
            "multipart/form-data": s.SnapshotUploadSerializer,
            "application/json": OpenApiTypes.OBJECT,
        },
        responses={201: s.SnapshotSerializer},
        description="Import a snapshot: upload files (scenario JSON, YuniKorn REST files or a "
        "full state dump) or post a scenario JSON document as the body.",
    )
)
class SnapshotViewSet(
    mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet[models.ClusterSnapshot]
):
    """Cluster snapshots with their queues, nodes, allocations and pending asks."""

    # the stored scenario document (megabytes for a big cluster) is never answered here:
    # rows are, and the export reads the snapshot's engine state
    queryset = models.ClusterSnapshot.objects.select_related(
        "partition__cluster", "imported_by"
    ).defer("scenario")
    serializer_class = s.SnapshotSerializer
    filterset_class = SnapshotFilter
    ordering_fields = ["captured_at", "imported_at", "id"]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        partition = None
        captured_at = None
        cluster = request.query_params.get("cluster") or None
        # DRF's parsers read the stream without Django's DATA_UPLOAD_MAX_MEMORY_SIZE check
        services.check_upload_size("body", int(request.META.get("CONTENT_LENGTH") or 0))
        if request.content_type and request.content_type.startswith("application/json"):
            services.check_snapshot_queues(request.data)
            files = {"scenario.json": json.dumps(request.data).encode()}
        else:
            files = _uploaded(request, "files") or _uploaded(request, "file")
            if not files:
                raise services.ServiceError("files", "upload at least one file")
            partition = request.data.get("partition") or None
            cluster = request.data.get("cluster") or cluster
            captured_at = _aware_time(request.data.get("captured_at"), "captured_at")
        snapshot = services.import_snapshot(
            files, user=request.user, partition=partition, cluster=cluster, captured_at=captured_at
        )
        return Response(s.SnapshotSerializer(snapshot).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.SnapshotQueueSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def queues(self, request: Request, pk: str | None = None) -> Response:
        return snapshot_rows_page(
            self, lambda snap: snap.queues.order_by("path"), s.SnapshotQueueSerializer
        )

    @extend_schema(responses=s.SnapshotNodeSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def nodes(self, request: Request, pk: str | None = None) -> Response:
        return snapshot_rows_page(
            self,
            lambda snap: services.snapshot_nodes(snap).order_by("node_id"),
            s.SnapshotNodeSerializer,
        )

    @extend_schema(
        responses=s.SnapshotAllocationSerializer(many=True),
        filters=False,
        parameters=[OpenApiParameter("queue", str, description="queue path or prefix")],
    )
    @action(detail=True, methods=["get"], filterset_class=None)
    def allocations(self, request: Request, pk: str | None = None) -> Response:
        queue = request.query_params.get("queue")

        def rows(snap: models.ClusterSnapshot) -> QuerySet[Any]:
            qs = services.snapshot_allocations(snap).order_by("key")
            # by the (partition, queue) index: a leaf's ~100 rows of 100,000
            return qs.filter(queue__startswith=queue) if queue else qs

        return snapshot_rows_page(self, rows, s.SnapshotAllocationSerializer)

    @extend_schema(responses=s.PendingAskSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def asks(self, request: Request, pk: str | None = None) -> Response:
        return snapshot_rows_page(
            self, lambda snap: snap.asks.order_by("key"), s.PendingAskSerializer
        )

    @extend_schema(responses=s.SnapshotApplicationSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def applications(self, request: Request, pk: str | None = None) -> Response:
        return snapshot_rows_page(
            self,
            lambda snap: services.snapshot_applications(snap).order_by("app_id"),
            s.SnapshotApplicationSerializer,
        )

    @extend_schema(
        filters=False,
        parameters=[
            OpenApiParameter("ask", str, description="request: preempt for this pending ask"),
            OpenApiParameter("quota", str, description="request: quota change QUEUE=JSON max"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"], filterset_class=None)
    def export(self, request: Request, pk: str | None = None) -> Response:
        """The snapshot as a scenario JSON that ``python -m engine`` accepts."""
        snapshot = self.get_object()
        req = services.export_request(
            snapshot,
            ask=request.query_params.get("ask"),
            quota=request.query_params.get("quota"),
        )
        return Response(services.scenario_document(snapshot, req))
