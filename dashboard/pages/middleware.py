"""Answer unknown things on the pages with a 404 in the product's own layout.

A page asked for a cluster, partition or snapshot that does not exist, or a view that
raises :class:`~django.http.Http404` (an unknown queue, run, change...), gets
``dashboard/not_found.html`` with status 404 and the reason, also when
``DEBUG`` is on.  Only the pages are concerned: the API keeps its own answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.pages import scope as scope_mod

_PAGES_MODULE = "dashboard.pages.views"


def _is_page(view: Callable[..., Any] | None) -> bool:
    module = getattr(view, "__module__", "") or ""
    return module.startswith(_PAGES_MODULE)


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    """The product's 404 page saying *message*."""
    return render(
        request,
        "dashboard/not_found.html",
        {"title": "Not found", "message": message},
        status=404,
    )


class PageNotFoundMiddleware:
    """Unknown scope in the URL and ``Http404`` from a page view -> the product's 404 page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        if not _is_page(view) or not request.user.is_authenticated:
            return None
        if not any(key in request.GET for key in ("cluster", "partition", "snapshot")):
            return None
        scope = scope_mod.resolve(request)
        if scope.problem is not None:
            return not_found(request, scope.problem)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, Http404):
            return None
        match = request.resolver_match
        if match is None or not _is_page(match.func):
            return None
        if not request.user.is_authenticated:
            return None
        text = str(exception) or "This page does not exist."
        if text.startswith("No ") and text.endswith("matches the given query."):
            text = "It does not exist (or no longer exists)."
        return not_found(request, text)
