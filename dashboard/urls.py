"""Root URL configuration: admin, the REST API under /api/, the pages."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from dashboard.metrics.views import metrics

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", include("dashboard.api.urls")),
    path("metrics", metrics, name="metrics"),  # Prometheus; docs/operations/metrics.md
    path("", include("dashboard.pages.urls")),
]
