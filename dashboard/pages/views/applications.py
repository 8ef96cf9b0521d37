"""One application: allocations, pending asks, state history, gang data, victim status."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import services
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.common import no_snapshot
from dashboard.pages.views.queues import shared_reasons


@login_required
@require_GET
def application(request: HttpRequest) -> HttpResponse:
    """``?app=<id>``: the application in the snapshot in view."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return no_snapshot(request, "Application")
    app_id = request.GET.get("app", "").strip()
    if not app_id:
        raise Http404("Name an application: ?app=<application id>.")
    try:
        view = services.application_view(scope.snapshot, app_id)
    except services.ServiceError as exc:
        raise Http404(f"Application {app_id!r} is not in snapshot {scope.snapshot.pk}.") from exc
    # a reason every allocation gives is said once, above the table
    shared, rows = shared_reasons(view["allocations"])
    return render(
        request,
        "dashboard/application.html",
        {
            "title": f"Application {app_id}",
            "app": view,
            "allocations": rows,
            "shared_reasons": shared,
        },
    )
