"""REST API viewsets: declarative reads, writes through ``dashboard.services``.

Reads need an authenticated user, writes a staff user (``IsStaffOrReadOnly``).
Service errors become 400 bodies naming the field (see ``exceptions``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import django_filters
from axes.handlers.proxy import AxesProxyHandler
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken import views as authtoken_views
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from dashboard import dataversion, models, services, signin
from dashboard.api import serializers as s
from dashboard.api.filters import ClusterFilter, IsoDateTimeFilter, Pagination
from dashboard.api.parsers import FormParser, JSONParser, MultiPartParser
from dashboard.pages.data import snapshot_key
from dashboard.pages.memo import Memo
from dashboard.services.quota.deadlines import set_timer_rules


class RenderedJSON(Response):
    """A response whose JSON body was rendered before (and kept): sent as it is, with the
    content type DRF's own JSON response names."""

    def __init__(self, body: bytes, media_type: str) -> None:
        super().__init__(None)
        self.content = body  # rendered: render() leaves it alone
        self["Content-Type"] = media_type


#: Pages of a snapshot's row lists (queues, nodes, allocations, asks, applications),
#: serialized, kept per process: a stored snapshot never changes (see ``_page``).
_SNAPSHOT_ROWS_MEMO: Memo[Any] = Memo(256)
#: The same pages rendered as JSON (the bytes sent).
_SNAPSHOT_BODY_MEMO: Memo[bytes] = Memo(256)


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


class PartitionFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="cluster__name")

    class Meta:
        model = models.Partition
        fields = ["cluster", "name"]


class ClusterViewSet(viewsets.ReadOnlyModelViewSet[models.Cluster]):
    """The YuniKorn clusters the dashboard holds (created by imports and live sources);
    every other list takes ``?cluster=<name>``."""

    queryset = models.Cluster.objects.prefetch_related("partitions")
    serializer_class = s.ClusterSerializer


class PartitionViewSet(viewsets.ReadOnlyModelViewSet[models.Partition]):
    """Scheduler partitions (created by imports)."""

    queryset = models.Partition.objects.select_related("cluster")
    serializer_class = s.PartitionSerializer
    filterset_class = PartitionFilter

    @extend_schema(request=s.TimerRulesSerializer, responses=s.PartitionSerializer)
    @action(detail=True, methods=["post"], url_path="timer-rules", filterset_class=None)
    def timer_rules(self, request: Request, pk: str | None = None) -> Response:
        """Set the partition's timer rule set (``scheduler`` or ``seed``); the waiting
        changes' deadlines are derived again under it (staff only)."""
        partition = self.get_object()
        body = s.TimerRulesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        set_timer_rules(partition, body.validated_data["timer_rules"], now=timezone.now())
        partition.refresh_from_db()
        return Response(s.PartitionSerializer(partition, context={"request": request}).data)


class ConfigVersionFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")

    class Meta:
        model = models.ConfigVersion
        fields = ["cluster", "partition", "checksum"]


@extend_schema_view(
    create=extend_schema(
        request={"multipart/form-data": s.ConfigUploadSerializer},
        responses={201: s.ConfigImportResultSerializer, 202: s.ImportJobSerializer},
        description="Import a queues.yaml or ConfigMap; every import is kept as a version. "
        "Queues whose max or quota delay changed get a scheduled quota change. A file "
        "larger than DASHBOARD_IMPORT_ASYNC_BYTES is imported by a worker: the answer is "
        "202 with the import job (GET /api/import-jobs/{id}/ for its progress).",
    )
)
class ConfigVersionViewSet(
    mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet[models.ConfigVersion]
):
    """Imported queue configs, one version per import and partition."""

    queryset = models.ConfigVersion.objects.select_related("partition__cluster", "imported_by")
    filterset_class = ConfigVersionFilter
    ordering_fields = ["imported_at", "number"]
    parser_classes = [MultiPartParser, FormParser]

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "retrieve":
            return s.ConfigVersionDetailSerializer
        if self.action == "create":
            return s.ConfigUploadSerializer
        return s.ConfigVersionSerializer

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        upload = s.ConfigUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        f = upload.validated_data["file"]
        services.check_upload_size("file", f.size or 0)
        services.check_config_size("file", f.size or 0)
        if (f.size or 0) > services.async_import_bytes():
            job = services.queue_config_import(
                f.read(),
                filename=f.name or "queues.yaml",
                user=request.user,
                partition=upload.validated_data.get("partition"),
                cluster=upload.validated_data.get("cluster"),
            )
            return Response(s.ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
        result = services.import_config(
            f.read(),
            filename=f.name or "queues.yaml",
            user=request.user,
            partition=upload.validated_data.get("partition"),
            cluster=upload.validated_data.get("cluster"),
        )
        body = {
            "versions": s.ConfigVersionSerializer(result.versions, many=True).data,
            "changes": [c.pk for c in result.changes],
        }
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "other", int, description="version to compare with (default: previous)"
            )
        ],
        responses={200: s.ConfigChangeSerializer(many=True)},
        filters=False,
    )
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def diff(self, request: Request, pk: str | None = None) -> Response:
        """Changes from another version (default: the previous one) to this one."""
        version = self.get_object()
        other_id = request.query_params.get("other")
        other = None
        if other_id:
            try:
                other = models.ConfigVersion.objects.get(
                    pk=int(other_id), partition_id=version.partition_id
                )
            except (ValueError, OverflowError, models.ConfigVersion.DoesNotExist):
                raise services.ServiceError(
                    "other", f"no config version {other_id[:30]!r} of this version's partition"
                ) from None
        changes = services.config_diff(version, other)
        return Response(changes)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "form", str, enum=["queues", "configmap"], description="YAML form (default queues)"
            )
        ],
        # the YAML document: queues.yaml ({"partitions": [...]}) or a ConfigMap
        responses={(200, "application/yaml"): OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        """The config as YuniKorn YAML, with the quota changes applied since it was imported."""
        version = self.get_object()
        form = request.query_params.get("form", "queues")
        if form not in ("queues", "configmap"):
            raise services.ServiceError("form", "must be queues or configmap")
        text = services.export_config_yaml(version, configmap=form == "configmap")
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        name = "yunikorn-configs.yaml" if form == "configmap" else "queues.yaml"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class ImportJobViewSet(viewsets.ReadOnlyModelViewSet[models.ImportJob]):
    """Large config uploads imported by a worker, with their progress."""

    queryset = models.ImportJob.objects.select_related("created_by").defer("data")
    serializer_class = s.ImportJobSerializer
    filterset_fields = ["status", "kind"]
    ordering_fields = ["created_at", "id"]


class SnapshotFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    captured_after = IsoDateTimeFilter(field_name="captured_at", lookup_expr="gte")
    captured_before = IsoDateTimeFilter(field_name="captured_at", lookup_expr="lte")

    class Meta:
        model = models.ClusterSnapshot
        fields = ["cluster", "partition", "source_kind"]


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

    def _page(
        self,
        rows: Callable[[models.ClusterSnapshot], QuerySet[Any]],
        serializer: type[BaseSerializer[Any]],
    ) -> Response:
        """One page of the snapshot's *rows*, serialized once per process.

        A stored snapshot's rows never change, so the answer's data is kept per process,
        keyed by the snapshot (id, checksum, import time), the list read, and the
        request's whole absolute URL (page, page size, ``?queue=``, and the host and
        scheme the ``next`` / ``previous`` links are built from). Errors (a page out of
        range, a bad page size) are raised by the build and never kept.
        """
        snapshot = self.get_object()

        def build() -> Any:
            qs = rows(snapshot)
            page = self.paginate_queryset(qs)
            if page is not None:
                return self.get_paginated_response(serializer(page, many=True).data).data
            return serializer(qs, many=True).data

        key = (self.action, snapshot_key(snapshot), self.request.build_absolute_uri())
        renderer = getattr(self.request, "accepted_renderer", None)
        if type(renderer) is not JSONRenderer:  # the browsable API: user's forms, CSRF
            return Response(_SNAPSHOT_ROWS_MEMO.get(key, build))
        media_type = self.request.accepted_media_type

        def render() -> bytes:
            data = _SNAPSHOT_ROWS_MEMO.get(key, build)
            context = self.get_renderer_context()
            return cast(bytes, renderer.render(data, media_type, context))

        # JSON (what clients ask for): the rendered body itself (rendering a page of rows
        # is most of what an answer costs)
        body = _SNAPSHOT_BODY_MEMO.get((key, media_type), render)
        return RenderedJSON(body, media_type)

    @extend_schema(responses=s.SnapshotQueueSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def queues(self, request: Request, pk: str | None = None) -> Response:
        return self._page(lambda snap: snap.queues.order_by("path"), s.SnapshotQueueSerializer)

    @extend_schema(responses=s.SnapshotNodeSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def nodes(self, request: Request, pk: str | None = None) -> Response:
        return self._page(
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

        return self._page(rows, s.SnapshotAllocationSerializer)

    @extend_schema(responses=s.PendingAskSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def asks(self, request: Request, pk: str | None = None) -> Response:
        return self._page(lambda snap: snap.asks.order_by("key"), s.PendingAskSerializer)

    @extend_schema(responses=s.SnapshotApplicationSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def applications(self, request: Request, pk: str | None = None) -> Response:
        return self._page(
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


#: Rendered list pages of runs, quota changes and alerts, per data versions (see below).
_LIST_BODY_MEMO: Memo[bytes] = Memo(256)


class VersionedListMixin:
    """``list`` answered from a per-process copy of its JSON body while the tables it
    reads are unchanged: keyed by their data versions (:mod:`dashboard.dataversion`,
    changed by every committed write), the request's absolute URL (filters, ordering,
    page, and the host of the ``next`` links) and the media type. Nothing of the user
    is in the body (every authenticated user reads the same lists; the permission is
    checked before ``list``). Other renderers (the browsable API) are not kept."""

    #: Every table the list's body is read from.
    list_tables: tuple[str, ...] = ()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        build = super().list  # type: ignore[misc]
        renderer = request.accepted_renderer
        if type(renderer) is not JSONRenderer:
            return cast(Response, build(request, *args, **kwargs))
        media_type = request.accepted_media_type

        def render() -> bytes:
            response = build(request, *args, **kwargs)
            context = self.get_renderer_context()  # type: ignore[attr-defined]
            return cast(bytes, renderer.render(response.data, media_type, context))

        key = (type(self).__name__, request.build_absolute_uri(), media_type)
        body = dataversion.cached(_LIST_BODY_MEMO, self.list_tables, key, render)
        return RenderedJSON(body, media_type)


def _run_response(run: models.PreemptionRun, wait: bool) -> Response:
    if wait:
        services.execute_run(run.pk)
        run.refresh_from_db()
        return Response(s.RunDetailSerializer(run).data, status=status.HTTP_201_CREATED)
    return Response(s.RunDetailSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class WhatIfViewSet(viewsets.GenericViewSet[models.PreemptionRun]):
    """What-if evaluations, stored as runs; ``wait`` evaluates in the request."""

    queryset = models.PreemptionRun.objects.all()
    serializer_class = s.WhatIfPreemptSerializer

    @extend_schema(
        request=s.WhatIfPreemptSerializer,
        responses={201: s.RunDetailSerializer, 202: s.RunDetailSerializer},
    )
    @action(detail=False, methods=["post"])
    def preempt(self, request: Request) -> Response:
        """Who would be preempted for a pending ask (``ask_key``) or a typed ``ask``."""
        data = s.WhatIfPreemptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = services.create_run(
            kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
            snapshot=v["snapshot"],
            request={"ask_key": v.get("ask_key"), "ask": v.get("ask")},
            user=request.user,
            idempotency_key=v.get("idempotency_key"),
            enqueue=not v["wait"],
        )
        return _run_response(run, v["wait"])

    @extend_schema(
        request=s.WhatIfQuotaSerializer,
        responses={201: s.RunDetailSerializer, 202: s.RunDetailSerializer},
    )
    @action(detail=False, methods=["post"])
    def quota(self, request: Request) -> Response:
        """The quota-decrease plan if *queue*'s max became *new_max* now."""
        data = s.WhatIfQuotaSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = services.create_run(
            kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
            snapshot=v["snapshot"],
            request={"queue": v["queue"], "new_max": v.get("new_max")},
            user=request.user,
            idempotency_key=v.get("idempotency_key"),
            enqueue=not v["wait"],
        )
        return _run_response(run, v["wait"])


class RunFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    queue = django_filters.CharFilter(field_name="queue")
    queue_prefix = django_filters.CharFilter(field_name="queue", lookup_expr="startswith")
    queued_after = IsoDateTimeFilter(field_name="queued_at", lookup_expr="gte")
    queued_before = IsoDateTimeFilter(field_name="queued_at", lookup_expr="lte")
    victim = django_filters.CharFilter(field_name="victims__allocation_key", distinct=True)
    nature = django_filters.ChoiceFilter(
        choices=models.PreemptionRun.Nature.choices, method="filter_nature"
    )

    class Meta:
        model = models.PreemptionRun
        fields = ["kind", "trigger", "status", "outcome", "snapshot"]

    def filter_nature(
        self, queryset: QuerySet[models.PreemptionRun], name: str, value: str
    ) -> QuerySet[models.PreemptionRun]:
        return queryset.filter(services.nature_filter(value))


class RunViewSet(VersionedListMixin, viewsets.ReadOnlyModelViewSet[models.PreemptionRun]):
    """Preemption run history: filter by queue, outcome, kind, trigger and date range."""

    queryset = models.PreemptionRun.objects.select_related(
        "partition__cluster", "created_by"
    ).annotate(
        victim_total=Coalesce(
            Subquery(
                models.RunVictim.objects.filter(run=OuterRef("pk"))
                .order_by()
                .values("run")
                .annotate(n=Count("pk"))
                .values("n"),
                output_field=IntegerField(),
            ),
            0,
        )
    )
    filterset_class = RunFilter
    list_tables = (
        "dashboard_preemptionrun",
        "dashboard_runvictim",
        "dashboard_partition",
        "dashboard_cluster",
        "auth_user",
    )
    ordering_fields = ["queued_at", "finished_at", "engine_ms", "id"]
    ordering = ["-queued_at", "-id"]
    pagination_class = Pagination

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        return s.RunDetailSerializer if self.action == "retrieve" else s.RunSerializer

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    @action(detail=False, methods=["get"], url_path="export")
    def export_csv(self, request: Request) -> HttpResponse:
        """The filtered history as CSV (one row per run; victims joined by spaces)."""
        runs = self.filter_queryset(self.get_queryset())
        response = HttpResponse(
            services.run_csv_lines(runs), content_type="text/csv; charset=utf-8"
        )
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="runs-{stamp}.csv"'
        return response


class RoundViewSet(viewsets.GenericViewSet[models.PreemptionRun], mixins.ListModelMixin):
    """Preemption rounds over a snapshot's pending asks."""

    queryset = models.PreemptionRun.objects.filter(kind=models.PreemptionRun.Kind.ROUND)
    serializer_class = s.RunSerializer
    pagination_class = Pagination

    @extend_schema(
        request=s.RoundInputSerializer,
        responses={201: s.RunDetailSerializer, 202: s.RunDetailSerializer},
    )
    def create(self, request: Request) -> Response:
        data = s.RoundInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = services.create_run(
            kind=models.PreemptionRun.Kind.ROUND,
            snapshot=v["snapshot"],
            request={"ask_keys": v.get("ask_keys"), "max_preempted": v.get("max_preempted")},
            user=request.user,
            idempotency_key=v.get("idempotency_key"),
            enqueue=not v["wait"],
        )
        return _run_response(run, v["wait"])


class QuotaChangeFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    queue = django_filters.CharFilter(field_name="queue_path")
    queue_prefix = django_filters.CharFilter(field_name="queue_path", lookup_expr="startswith")
    planned = django_filters.BooleanFilter(
        field_name="applied_at",
        lookup_expr="isnull",
        label="true: made in the dashboard and not yet seen applied in the cluster's config",
    )

    class Meta:
        model = models.QuotaChange
        fields = ["state", "config_version", "clock_source", "learned"]


@extend_schema_view(
    create=extend_schema(
        request=s.QuotaChangeInputSerializer, responses={201: s.QuotaChangeSerializer}
    ),
    partial_update=extend_schema(
        request=s.QuotaChangeEditSerializer,
        responses={200: s.QuotaChangeSerializer},
        description="Edit a waiting change: recorded as a further change of the same queue, "
        "which resets the timer from now (the answer is the new change).",
    ),
)
class QuotaChangeViewSet(
    VersionedListMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet[models.QuotaChange],
):
    """Scheduled quota changes and their delay timers."""

    queryset = models.QuotaChange.objects.select_related("partition__cluster", "created_by")
    list_tables = ("dashboard_quotachange", "dashboard_partition", "dashboard_cluster", "auth_user")
    serializer_class = s.QuotaChangeSerializer
    filterset_class = QuotaChangeFilter
    ordering_fields = ["changed_at", "deadline", "id"]
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "create":
            return s.QuotaChangeInputSerializer
        if self.action == "partial_update":
            return s.QuotaChangeEditSerializer
        return s.QuotaChangeSerializer

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        v = serializer.validated_data
        serializer.instance = services.schedule_quota_change(
            v["partition"],
            v["queue_path"],
            **{k: v[k] for k in ("new_max", "new_delay") if k in v},
            user=self.request.user,
            snapshot=v.get("snapshot"),
        )

    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        self.perform_create(serializer)
        assert isinstance(serializer.instance, models.QuotaChange)
        return Response(
            s.QuotaChangeSerializer(serializer.instance).data, status=status.HTTP_201_CREATED
        )

    def partial_update(self, request: Request, *args: object, **kwargs: object) -> Response:
        change = self.get_object()
        if change.state != models.QuotaChange.State.WAITING:
            raise services.ServiceError(
                "state", f"only a waiting change can be edited; this one is {change.state}"
            )
        data = s.QuotaChangeEditSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        new = services.schedule_quota_change(
            change.partition,
            change.queue_path,
            **{k: v[k] for k in ("new_max", "new_delay") if k in v},
            user=request.user,
            snapshot=change.snapshot,
        )
        return Response(s.QuotaChangeSerializer(new).data)

    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        if not kwargs.get("partial"):
            return self.http_method_not_allowed(request)
        return self.partial_update(request, *args, **kwargs)

    @extend_schema(request=None, responses={200: s.QuotaChangeSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Withdraw a waiting change (one applied in the cluster: only the dashboard's
        prediction stops; the scheduler's own timer keeps running)."""
        change = services.cancel_quota_change(self.get_object(), user=request.user)
        return Response(s.QuotaChangeSerializer(change).data)


class AlertFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    acknowledged = django_filters.BooleanFilter(
        field_name="acknowledged_at", lookup_expr="isnull", exclude=True
    )
    created_after = IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")

    class Meta:
        model = models.Alert
        fields = ["level", "kind", "queue", "run", "change"]


class AlertViewSet(VersionedListMixin, viewsets.ReadOnlyModelViewSet[models.Alert]):
    """The administrator alert feed."""

    queryset = models.Alert.objects.select_related("partition__cluster", "acknowledged_by")
    list_tables = ("dashboard_alert", "dashboard_partition", "dashboard_cluster", "auth_user")
    serializer_class = s.AlertSerializer
    filterset_class = AlertFilter
    pagination_class = Pagination

    @extend_schema(
        responses=s.UnreadCountSerializer,
        filters=False,
        parameters=[
            OpenApiParameter("cluster", str, description="count this cluster's alerts only")
        ],
    )
    @action(detail=False, methods=["get"], filterset_class=None)
    def unread(self, request: Request) -> Response:
        """How many alerts nobody acknowledged yet (of every cluster, or ``?cluster=``)."""
        unread = models.Alert.objects.filter(acknowledged_at__isnull=True)
        cluster = request.query_params.get("cluster")
        if cluster:
            unread = AlertFilter().filters["cluster"].filter(unread, cluster)
        return Response({"unread": unread.count()})

    @extend_schema(request=None, responses={200: s.AlertSerializer})
    @action(detail=True, methods=["post"])
    def acknowledge(self, request: Request, pk: str | None = None) -> Response:
        alert = services.acknowledge_alert(self.get_object(), user=request.user)
        return Response(s.AlertSerializer(alert).data)

    @extend_schema(request=None, responses={200: s.UnreadCountSerializer}, filters=False)
    @action(detail=False, methods=["post"], url_path="acknowledge-all", filterset_class=None)
    def acknowledge_all(self, request: Request) -> Response:
        services.acknowledge_all_alerts(user=request.user)
        return Response(
            {"unread": models.Alert.objects.filter(acknowledged_at__isnull=True).count()}
        )


class ObtainAuthToken(authtoken_views.ObtainAuthToken):
    """DRF's token endpoint, refusing a locked-out username and address with 429.

    django-axes counts the failures (they go through ``authenticate()``); its
    middleware cannot see a lockout flagged on DRF's request wrapper, so the
    lockout is checked here before the credentials are.
    """

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = request.data if hasattr(request.data, "get") else {}
        problems = {
            field: [problem]
            for field in ("username", "password")
            if field in data
            and (problem := signin.credential_problem(field, data.get(field))) is not None
        }
        if problems:
            return Response(problems, status=status.HTTP_400_BAD_REQUEST)
        username = data.get("username")
        credentials = {"username": username} if isinstance(username, str) else None
        if AxesProxyHandler.is_locked(request._request, credentials):
            return Response(
                {"detail": "too many failed logins: try again later"},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
            )
        return super().post(request, *args, **kwargs)


@extend_schema(exclude=True)
class ApiNotFound(APIView):
    """An ``/api/`` path no route matches: a JSON 404 (not Django's HTML page), after the
    same authentication and permission checks as every API view."""

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound()

    get = post = put = patch = delete = _not_found
