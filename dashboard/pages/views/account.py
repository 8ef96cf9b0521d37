"""Sign-in, sign-out and the home redirect."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import (
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import redirect
from django.views.decorators.http import (
    require_safe,
)

from dashboard.access.scoping import is_tenant
from dashboard.pages.views.common import scoped_url


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        # the identity provider's button (docs/operations/sign-in.md)
        context["oidc_enabled"] = settings.OIDC is not None
        context["oidc_provider_name"] = settings.OIDC.provider_name if settings.OIDC else ""
        return context


class LogoutView(auth_views.LogoutView):
    """POST only (Django 5): a link cannot sign anybody out; CSRF protected."""

    next_page = "login"


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    if is_tenant(request.user):  # the queue ACLs restrict this user: its queues first
        return redirect(scoped_url("access", request))
    return redirect(scoped_url("tree", request))
