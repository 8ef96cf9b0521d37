"""API views of clusters and partitions (and a partition's timer rule set)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import models
from dashboard.api import serializers as s
from dashboard.api.filtersets import PartitionFilter
from dashboard.services.quota.deadlines import set_timer_rules


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
