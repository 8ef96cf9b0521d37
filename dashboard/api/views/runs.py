"""API views of runs: what-ifs, rounds, and the run history."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from dashboard import models, services
from dashboard.access.redaction import tenant_redaction
from dashboard.api import serializers as s
from dashboard.api.caches import VersionedListMixin
from dashboard.api.filters import Pagination
from dashboard.api.filtersets import RunFilter


def _ask_for_run(
    request: Request,
    serializer: type[serializers.Serializer[Any]],
    kind: models.PreemptionRun.Kind,
    fields: tuple[str, ...],
) -> Response:
    """Validate the body with *serializer* and store a run of *kind* whose request holds
    *fields* of it; evaluated here with ``wait`` (201), else queued for a worker (202)."""
    data = serializer(data=request.data)
    data.is_valid(raise_exception=True)
    v = data.validated_data
    run = services.create_run(
        kind=kind,
        snapshot=v["snapshot"],
        request={name: v.get(name) for name in fields},
        user=request.user,
        idempotency_key=v.get("idempotency_key"),
        enqueue=not v["wait"],
    )
    if v["wait"]:
        services.execute_run(run.pk)
        run.refresh_from_db()
    code = status.HTTP_201_CREATED if v["wait"] else status.HTTP_202_ACCEPTED
    # victims in queues the user cannot view: without their names (the request's user)
    answer = s.RunDetailSerializer(run, context={"request": request})
    return Response(answer.data, status=code)


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
        return _ask_for_run(
            request,
            s.WhatIfPreemptSerializer,
            models.PreemptionRun.Kind.WHATIF_PREEMPT,
            ("ask_key", "ask"),
        )

    @extend_schema(
        request=s.WhatIfQuotaSerializer,
        responses={201: s.RunDetailSerializer, 202: s.RunDetailSerializer},
    )
    @action(detail=False, methods=["post"])
    def quota(self, request: Request) -> Response:
        """The quota-decrease plan if *queue*'s max became *new_max* now."""
        return _ask_for_run(
            request,
            s.WhatIfQuotaSerializer,
            models.PreemptionRun.Kind.WHATIF_QUOTA,
            ("queue", "new_max"),
        )


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
            services.run_csv_lines(runs, redact=tenant_redaction(request.user)),
            content_type="text/csv; charset=utf-8",
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
        return _ask_for_run(
            request,
            s.RoundInputSerializer,
            models.PreemptionRun.Kind.ROUND,
            ("ask_keys", "max_preempted"),
        )
