"""API routes under /api/: the router's viewsets, auth token, OpenAPI schema and docs
(schema and docs for signed-in users only, like the rest of the API)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from dashboard.alerting import api as alerting_api
from dashboard.api import overtime, plans, views, worklost

router = DefaultRouter()
router.register("clusters", views.ClusterViewSet)
router.register("partitions", views.PartitionViewSet)
router.register("configs", views.ConfigVersionViewSet)
router.register("import-jobs", views.ImportJobViewSet)
router.register("snapshots", views.SnapshotViewSet)
router.register("whatif", views.WhatIfViewSet, basename="whatif")
router.register("rounds", views.RoundViewSet, basename="round")
router.register("quota-changes", views.QuotaChangeViewSet)
router.register("runs", views.RunViewSet)
router.register("alerts", views.AlertViewSet)
router.register("plans", plans.PlanViewSet, basename="plan")
router.register("queue-over-time", overtime.QueueOverTimeViewSet, basename="queue-over-time")
router.register("alert-routes", alerting_api.AlertRouteViewSet)
router.register("alert-deliveries", alerting_api.AlertDeliveryViewSet)

urlpatterns: list[URLPattern | URLResolver] = [
    path("", include(router.urls)),
    path("", include("dashboard.sources.urls")),  # cluster sources
    path("work-lost/", worklost.WorkLostView.as_view(), name="work-lost"),
    path("auth/token/", views.ObtainAuthToken.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # schema and docs: signed-in users only (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"])
    # the split view serves Swagger UI's start script as a file (no inline script: CSP)
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    # ReDoc is dropped: its bundle always loads a logo from its vendor's CDN (nothing
    # may be fetched from outside); its old address leads to Swagger UI
    path("redoc/", RedirectView.as_view(pattern_name="swagger-ui", permanent=True)),
    # anything else under /api/ (e.g. /api/runs/1.5/): a JSON 404 like the API's own
    re_path(r"^.+$", views.ApiNotFound.as_view(), name="api-not-found"),
]
