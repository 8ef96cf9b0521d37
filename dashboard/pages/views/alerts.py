"""The alert feed and acknowledging alerts."""

from __future__ import annotations

from urllib.parse import urlencode

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
    """The administrator alert feed, unread first by default.

    The feed holds every cluster's alerts (``from_cluster`` narrows it to one); each
    alert names its cluster and partition, and its queue and change links lead to that
    cluster's partition, not the one in view (two clusters may both have ``default``).
    """
    show = request.GET.get("show", "all")
    kind = request.GET.get("kind", "")
    from_cluster = request.GET.get("from_cluster", "")
    rows = models.Alert.objects.select_related(
        "partition__cluster", "run", "change", "acknowledged_by"
    )
    if show == "unread":
        rows = rows.filter(acknowledged_at__isnull=True)
    if kind:
        rows = rows.filter(kind=kind)
    if from_cluster:
        rows = rows.filter(partition__cluster__name=from_cluster)
    rows = rows.order_by("-created_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    for alert in page:
        _place(alert)
    return render(
        request,
        "dashboard/alerts.html",
        {
            "title": "Alerts",
            "alerts": page,
            "show": show,
            "kind": kind,
            "kinds": models.Alert.Kind.choices,
            "from_cluster": from_cluster,
            "alert_clusters": list(
                models.Cluster.objects.order_by("name").values_list("name", flat=True)
            ),
        },
    )


def _place(alert: models.Alert) -> None:
    """Set ``where`` (cluster / partition) and the links to the alert's own partition."""
    part = alert.partition
    pinned = {"cluster": part.cluster.name, "partition": part.name} if part is not None else {}
    alert.where = f"{part.cluster.name} / {part.name}" if part is not None else ""  # type: ignore[attr-defined]
    alert.queue_url = f"{reverse('queue')}?{urlencode({**pinned, 'queue': alert.queue})}"  # type: ignore[attr-defined]
    alert.changes_url = f"{reverse('changes')}?{urlencode({**pinned, 'queue': alert.queue})}"  # type: ignore[attr-defined]


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
