"""Sign-in, sign-out and the home redirect."""

from __future__ import annotations

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

from dashboard.pages.views.common import scoped_url


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    """POST only (Django 5): a link cannot sign anybody out; CSRF protected."""

    next_page = "login"


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return redirect(scoped_url("tree", request))
