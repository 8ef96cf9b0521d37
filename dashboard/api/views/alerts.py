"""API views of the administrator alert feed."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import models, services
from dashboard.api import serializers as s
from dashboard.api.caches import VersionedListMixin
from dashboard.api.filters import Pagination
from dashboard.api.filtersets import AlertFilter


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
