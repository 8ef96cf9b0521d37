"""Alert routes and their delivery log (staff only): the routes, one route with its
deliveries and its test button, and every delivery."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import models
from dashboard.alerting import delivery
from dashboard.pages.views.common import staff_required


@staff_required
@require_GET
def routes(request: HttpRequest) -> HttpResponse:
    rows = models.AlertRoute.objects.select_related("cluster").order_by("name")
    return render(request, "dashboard/alert_routes.html", {"title": "Alert routes", "routes": rows})


def _log(
    request: HttpRequest, route: models.AlertRoute | None = None
) -> Page[models.AlertDelivery]:
    """A page of the delivery log, newest first, of one route or all, by ``status``."""
    status = request.GET.get("status", "")
    rows = models.AlertDelivery.objects.select_related("route", "alert__partition__cluster")
    if route is not None:
        rows = rows.filter(route=route)
    if status in models.AlertDelivery.Status.values:
        rows = rows.filter(status=status)
    return Paginator(rows.order_by("-created_at", "-id"), 50).get_page(request.GET.get("page"))


@staff_required
@require_GET
def route_detail(request: HttpRequest, pk: int) -> HttpResponse:
    route = get_object_or_404(models.AlertRoute.objects.select_related("cluster"), pk=pk)
    return render(
        request,
        "dashboard/alert_route.html",
        {
            "title": f"Alert route {route.name}",
            "route": route,
            "deliveries": _log(request, route),
            "statuses": models.AlertDelivery.Status.choices,
            "status": request.GET.get("status", ""),
        },
    )


@staff_required
@require_POST
def route_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a test delivery (a sample alert) over the route; the log shows how it went."""
    route = get_object_or_404(models.AlertRoute, pk=pk)
    row = delivery.queue_test(route)
    messages.success(request, f"Test delivery {row.pk} queued; its outcome appears below.")
    return HttpResponseRedirect(reverse("alert_route", args=[route.pk]))


@staff_required
@require_GET
def deliveries(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "dashboard/alert_deliveries.html",
        {
            "title": "Alert deliveries",
            "deliveries": _log(request),
            "statuses": models.AlertDelivery.Status.choices,
            "status": request.GET.get("status", ""),
        },
    )
