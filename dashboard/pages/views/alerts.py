"""The alert feed and acknowledging alerts."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import (
    require_GET,
    require_POST,
)

from dashboard import models, services
from dashboard.pages.views.common import next_url, staff_required


@login_required
@require_GET
def alerts(request: HttpRequest) -> HttpResponse:
    """The administrator alert feed, unread first by default."""
    show = request.GET.get("show", "all")
    kind = request.GET.get("kind", "")
    rows = models.Alert.objects.select_related("partition", "run", "change", "acknowledged_by")
    if show == "unread":
        rows = rows.filter(acknowledged_at__isnull=True)
    if kind:
        rows = rows.filter(kind=kind)
    rows = rows.order_by("-created_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/alerts.html",
        {
            "title": "Alerts",
            "alerts": page,
            "show": show,
            "kind": kind,
            "kinds": models.Alert.Kind.choices,
        },
    )


@require_POST
@staff_required
def alert_ack(request: HttpRequest, pk: int) -> HttpResponse:
    """Acknowledge one alert (staff only)."""
    alert = get_object_or_404(models.Alert, pk=pk)
    services.acknowledge_alert(alert, user=request.user)
    return HttpResponseRedirect(next_url(request, reverse("alerts")))


@require_POST
@staff_required
def alert_ack_all(request: HttpRequest) -> HttpResponse:
    """Acknowledge every unread alert (staff only)."""
    n = services.acknowledge_all_alerts(user=request.user)
    messages.success(request, f"{n} alert{'s' if n != 1 else ''} acknowledged.")
    return HttpResponseRedirect(next_url(request, reverse("alerts")))
