"""API views of scheduled quota changes: schedule, edit, cancel."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from dashboard import models, services
from dashboard.api import serializers as s
from dashboard.api.caches import VersionedListMixin
from dashboard.api.filtersets import QuotaChangeFilter


@extend_schema_view(
    create=extend_schema(
        request=s.QuotaChangeInputSerializer, responses={201: s.QuotaChangeSerializer}
    ),
    partial_update=extend_schema(
        request=s.QuotaChangeEditSerializer,
        responses={200: s.QuotaChangeSerializer},
        description="Edit a waiting change: recorded as a further change of the same queue "
        "(the answer is the new change), whose timer follows the partition's timer rules: "
        "under `scheduler` a lower max keeps the first start and a new delay shifts the "
        "deadline by the difference; under `seed` the timer starts again from now.",
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
