"""API views of config versions (import, diff, export) and import jobs."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from dashboard import models, services
from dashboard.api import serializers as s
from dashboard.api.filtersets import ConfigVersionFilter
from dashboard.api.parsers import FormParser, MultiPartParser


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
