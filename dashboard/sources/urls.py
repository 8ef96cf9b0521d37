"""API routes of the cluster-sources app, included under /api/ by ``dashboard.api.urls``.

A SimpleRouter (no second API root view); the two extra paths sit beside the
platform's ``snapshots/`` and ``quota-changes/`` routes without clashing with them.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path
from rest_framework.routers import SimpleRouter

from dashboard.sources import api

router = SimpleRouter()
router.register("sources", api.ClusterSourceViewSet)

urlpatterns: list[URLPattern | URLResolver] = [
    path("", include(router.urls)),
    path(
        "snapshots/<int:a>/compare/<int:b>/",
        api.SnapshotCompareView.as_view(),
        name="snapshot-compare",
    ),
    path(
        "quota-changes/<int:pk>/config/",
        api.ChangeConfigView.as_view(),
        name="quota-change-config",
    ),
]
