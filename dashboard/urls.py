"""Root URL configuration: admin, the REST API under /api/, the pages."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, include, path

from dashboard.access import oidc
from dashboard.metrics.views import metrics


def favicon(request: HttpRequest) -> HttpResponseBase:
    """Browsers ask for /favicon.ico on pages without an icon link (the admin's)."""
    return redirect(static("dashboard/favicon.svg"), permanent=True)


# an unreachable database answers 503 (a page, or JSON under /api/), not an HTML 500
handler500 = "dashboard.pages.errors.server_error"

urlpatterns: list[URLPattern | URLResolver] = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/", include("dashboard.api.urls")),
    path("metrics", metrics, name="metrics"),  # Prometheus; docs/operations/metrics.md
    # single sign-on (OpenID Connect): start and callback; docs/operations/sign-in.md
    path("oidc/authenticate/", oidc.StartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.CallbackView.as_view(), name="oidc_authentication_callback"),
    path("", include("dashboard.pages.urls")),
]
