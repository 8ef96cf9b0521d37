"""What every page shares: the staff check, scoped links, sorting, figure JSON, query parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth import views as auth_views
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import (
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import render
from django.urls import reverse

from dashboard import models
from dashboard.pages import scope as scope_mod

View = TypeVar("View", bound=Callable[..., HttpResponse])


RUN_ACTIVE = (models.PreemptionRun.Status.PENDING, models.PreemptionRun.Status.RUNNING)


def staff_required(view: View) -> View:
    """Signed in *and* staff, checked on the server: anyone else gets 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return auth_views.redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Only staff users can change anything.")
        return view(request, *args, **kwargs)

    return cast(View, wrapper)


def administrator_required(view: View) -> View:
    """Signed in, and staff or administering a queue by the queue ACLs: anyone else gets
    403 (the services refuse a queue the user does not administer)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        from dashboard.access import scoping

        if not request.user.is_authenticated:
            return auth_views.redirect_to_login(request.get_full_path())
        if not scoping.administers_any_queue(request.user):
            raise PermissionDenied("Only staff and queue administrators can change anything.")
        return view(request, *args, **kwargs)

    return cast(View, wrapper)


def scoped_url(name: str, request: HttpRequest, *args: object, **params: object) -> str:
    """URL of page *name* keeping the request's scope, plus *params*."""
    scope = scope_mod.resolve(request)
    url = reverse(name, args=args) if args else reverse(name)
    query = scope.query(**params)
    return f"{url}?{query}" if query else url


def no_snapshot(request: HttpRequest, title: str) -> HttpResponse:
    return render(request, "dashboard/empty.html", {"title": title})


def sorted_by(
    rows: QuerySet[Any], request: HttpRequest, allowed: Mapping[str, str], default: str
) -> tuple[QuerySet[Any], str, bool]:
    """Order *rows* by the ``sort`` / ``dir`` query parameters (stable: pk last)."""
    key = request.GET.get("sort", default)
    if key not in allowed:
        key = default
    descending = request.GET.get("dir") == "desc"
    field = allowed[key]
    return rows.order_by(f"-{field}" if descending else field, "pk"), key, descending


def figure_json(fig: Mapping[str, object]) -> dict[str, object]:
    return dict(fig)


def int_param(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def next_url(request: HttpRequest, default: str) -> str:
    """A same-site ``next`` URL from the form, else *default*."""
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
