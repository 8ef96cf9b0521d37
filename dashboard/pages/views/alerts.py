"""The alert feed and acknowledging alerts."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
)
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import dateformat, timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from django.views.decorators.http import (
    require_GET,
    require_POST,
)

from dashboard import dataversion, models, services
from dashboard.access import scoping
from dashboard.access.redaction import RowRedactions
from dashboard.pages.memo import Memo
from dashboard.pages.templatetags.pages import humanize
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
    number = request.GET.get("page")
    user = request.user

    def build() -> _Feed:
        rows = models.Alert.objects.select_related("partition__cluster", "acknowledged_by")
        rows = scoping.filter_viewable(rows, user, "queue")
        if show == "unread":
            rows = rows.filter(acknowledged_at__isnull=True)
        if kind:
            rows = rows.filter(kind=kind)
        if from_cluster:
            rows = rows.filter(partition__cluster__name=from_cluster)
        rows = rows.order_by("-created_at", "-id")
        page = Paginator(rows, 50).get_page(number)
        hidden = RowRedactions(user)  # a tenant: no name of a queue it cannot view
        items = [_item(_shown(alert, hidden)) for alert in page]
        page.object_list = []  # the rows are in items; the pager reads the counts only
        clusters = list(models.Cluster.objects.order_by("name").values_list("name", flat=True))
        return page, items, clusters

    # kept per process while no alert, partition, cluster or user changes, per filter
    # and page (dashboard.dataversion); what is the reader's (the acknowledge buttons,
    # their CSRF token, "acknowledged ... ago") is added to each item below
    key = (show, kind, from_cluster, number, scoping.read_scope_key(user))
    page, items, clusters = dataversion.cached(_FEED_MEMO, _FEED_TABLES, key, build)
    return render(
        request,
        "dashboard/alerts.html",
        {
            "title": "Alerts",
            "alerts": page,
            "feed": _feed_html(items, request),
            "show": show,
            "kind": kind,
            "kinds": models.Alert.Kind.choices,
            "from_cluster": from_cluster,
            "alert_clusters": clusters,
            # the filtered feed's own unread count (the header's badge: the cluster in view)
            "feed_unread": scoping.filter_viewable(
                services.unread_alerts(cluster=from_cluster, kind=kind), user, "queue"
            ).count(),
        },
    )


@dataclass(frozen=True, slots=True)
class _Item:
    """One alert of the feed: its HTML up to the time line's end, and who acknowledged it."""

    pk: int
    head: str
    acknowledged_at: datetime | None
    acknowledged_by: str


#: A page of the feed (counts only), its items and the clusters to filter by.
_Feed = tuple[Page[models.Alert], list[_Item], list[str]]

#: Every table the feed is read from.
_FEED_TABLES = ("dashboard_alert", "dashboard_partition", "dashboard_cluster", "auth_user")

#: Feed pages per data versions and filter.
_FEED_MEMO: Memo[_Feed] = Memo(64)


def _shown(alert: models.Alert, hidden: RowRedactions) -> models.Alert:
    """*alert* as its reader may read it (a copy, never saved, when its message hides
    names)."""
    message = hidden.text(alert.message, alert.run if alert.run_id else None, alert.partition)
    if message == alert.message:
        return alert
    shown = copy.copy(alert)
    shown.message = message
    return shown


def _item(alert: models.Alert) -> _Item:
    """The alert's HTML as the feed shows it, every value escaped (what the template
    ``alerts.html`` wrote per alert), without the reader's parts."""
    where, queue_url, changes_url = _place(alert)
    links = []
    if where:
        links.append(
            f'<span class="mono" data-testid="alert-where" title="cluster / partition">'
            f"{escape(where)}</span>"
        )
    if alert.queue:
        links.append(f'<a class="mono" href="{escape(queue_url)}">{escape(alert.queue)}</a>')
    if alert.run_id:
        links.append(f'<a href="{reverse("run", args=[alert.run_id])}">run #{alert.run_id}</a>')
    if alert.change_id:
        links.append(f'<a href="{escape(changes_url)}">change #{alert.change_id}</a>')
    level = escape(alert.level)
    when = f"{_when(alert.created_at)} UTC"
    if alert.count > 1:
        last = _when(alert.last_seen_at)
        when += f' · <span class="repeat">\u00d7{alert.count}, last {last} UTC</span>'
    head = (
        f'\n    <li class="{"" if alert.acknowledged_at else "unread"}" data-testid="alert" '
        f'data-alert-id="{alert.pk}">\n'
        f'      <span class="dot {level}" title="{escape(alert.get_level_display())}"></span>\n'
        f'      <div class="body">\n'
        f'        <div class="actions small"><span class="pill {level}">'
        f"{escape(alert.get_kind_display())}</span>{''.join(links)}</div>\n"
        f'        <div class="msg">{escape(humanize(alert.message))}</div>\n'
        f'        <div class="when">{when}'
    )
    user = alert.acknowledged_by
    return _Item(
        alert.pk,
        head,
        alert.acknowledged_at,
        (user.get_username() if user is not None else "") or "someone",
    )


def _when(value: datetime | None) -> str:
    return "" if value is None else dateformat.format(timezone.localtime(value), "Y-m-d H:i:s")


def _feed_html(items: list[_Item], request: HttpRequest) -> SafeString:
    """The feed's items with the reader's parts: how long ago each was acknowledged and,
    for staff, the button acknowledging an unread one (with this request's CSRF token)."""
    staff = bool(getattr(request.user, "is_staff", False))
    form = ""
    if staff:
        token = escape(get_token(request))
        form = (
            '      <form method="post" action="{action}" class="inline-form">'
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
            f'<input type="hidden" name="next" value="{escape(request.get_full_path())}">'
            '<button type="submit" class="button small secondary" data-testid="ack">'
            "Acknowledge</button></form>\n"
        )
    out = []
    for item in items:
        out.append(item.head)
        if item.acknowledged_at is not None:
            out.append(
                f" · acknowledged by {escape(item.acknowledged_by)} "
                f"{escape(timesince(item.acknowledged_at))} ago"
            )
        out.append("</div>\n      </div>\n")
        if staff and item.acknowledged_at is None:
            out.append(form.format(action=reverse("alert_ack", args=[item.pk])))
        out.append("    </li>\n    ")
    return mark_safe("".join(out))  # every value above is escaped


def _place(alert: models.Alert) -> tuple[str, str, str]:
    """Where (cluster / partition) and the queue and changes links to the alert's own
    partition."""
    part = alert.partition
    pinned = {"cluster": part.cluster.name, "partition": part.name} if part is not None else {}
    where = f"{part.cluster.name} / {part.name}" if part is not None else ""
    query = urlencode({**pinned, "queue": alert.queue})
    return where, f"{reverse('queue')}?{query}", f"{reverse('changes')}?{query}"


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
    """Acknowledge every unread alert the feed shows: of the cluster and kind it is
    filtered by, when it is (staff only)."""
    cluster = request.POST.get("from_cluster", "")
    n = services.acknowledge_all_alerts(
        user=request.user, cluster=cluster, kind=request.POST.get("kind", "")
    )
    where = f" of {cluster}" if cluster else ""
    messages.success(request, f"{n} alert{'s' if n != 1 else ''}{where} acknowledged.")
    return HttpResponseRedirect(next_url(request, reverse("alerts")))
