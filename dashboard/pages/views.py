"""The pages: sign-in, queue tree and detail, nodes, victims, what-if, changes, history,
alerts, config versions and imports.

Every page needs a signed-in user; every write needs a staff user and is
checked here on the server (a viewer's POST gets 403 whatever the page shows).
Writes go through :mod:`dashboard.services`; reads use the ORM and
:mod:`dashboard.pages.data`; figures come from :mod:`dashboard.charts`.
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import (
    require_GET,
    require_http_methods,
    require_POST,
    require_safe,
)

from dashboard import charts, display, models, services
from dashboard.importers import quantities
from dashboard.pages import data, forms
from dashboard.pages import scope as scope_mod

View = TypeVar("View", bound=Callable[..., HttpResponse])

RUN_ACTIVE = (models.PreemptionRun.Status.PENDING, models.PreemptionRun.Status.RUNNING)


# --------------------------------------------------------------------------- helpers


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


def _scoped(name: str, request: HttpRequest, *args: object, **params: object) -> str:
    """URL of page *name* keeping the request's scope, plus *params*."""
    scope = scope_mod.resolve(request)
    url = reverse(name, args=args) if args else reverse(name)
    query = scope.query(**params)
    return f"{url}?{query}" if query else url


def _no_snapshot(request: HttpRequest, title: str) -> HttpResponse:
    return render(request, "dashboard/empty.html", {"title": title})


def _sorted(
    rows: QuerySet[Any], request: HttpRequest, allowed: Mapping[str, str], default: str
) -> tuple[QuerySet[Any], str, bool]:
    """Order *rows* by the ``sort`` / ``dir`` query parameters (stable: pk last)."""
    key = request.GET.get("sort", default)
    if key not in allowed:
        key = default
    descending = request.GET.get("dir") == "desc"
    field = allowed[key]
    return rows.order_by(f"-{field}" if descending else field, "pk"), key, descending


def _figure_json(fig: Mapping[str, object]) -> dict[str, object]:
    return dict(fig)


# --------------------------------------------------------------------------- sign-in


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    """POST only (Django 5): a link cannot sign anybody out; CSRF protected."""

    next_page = "login"


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return redirect(_scoped("tree", request))


# --------------------------------------------------------------------------- queue tree


@login_required
@require_GET
def tree(request: HttpRequest) -> HttpResponse:
    """The queue hierarchy as an icicle plus the selected queue's bars."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return _no_snapshot(request, "Queue tree")
    waiting = data.waiting_changes(scope.snapshot.partition)
    rows = data.queue_rows(scope.snapshot, changes=waiting)
    types = data.resource_types_of(scope.snapshot, rows)
    rtype = request.GET.get("type") or None
    if rtype not in types:
        rtype = None
    paths = [r.path for r in rows]
    selected = request.GET.get("queue") or "root"
    if selected not in paths:
        selected = paths[0] if paths else "root"
    depth = _int(request.GET.get("depth"))
    if depth is None:
        depth = -1 if len(rows) <= 60 else 3
    level = request.GET.get("queue") if request.GET.get("queue") in paths else None
    tree_fig = charts.queue_tree_figure(rows, rtype, maxdepth=depth, level=level)
    selected_row = next((r for r in rows if r.path == selected), None)
    bars_fig = charts.queue_bars_figure(selected_row, types) if selected_row else None
    counts: dict[str, int] = {state: 0 for state in charts.STATES}
    for r in rows:
        counts[charts.queue_state(r, rtype)] += 1
    return render(
        request,
        "dashboard/tree.html",
        {
            "title": "Queue tree",
            "tree_figure": tree_fig,
            "bars_figure": bars_fig,
            "types": types,
            "rtype": rtype or "",
            "selected": selected,
            "paths": paths,
            "depth": depth,
            "queue_count": len(rows),
            "leaf_count": scope.snapshot.queues.filter(is_leaf=True).count(),
            "node_count": scope.snapshot.nodes.count(),
            "states": [
                (key, label, colour, counts[key]) for key, (label, colour) in charts.STATES.items()
            ],
            "waiting": waiting,
        },
    )


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


@login_required
@require_GET
def tree_bars(request: HttpRequest) -> JsonResponse:
    """The per-queue bars figure for ``?queue=`` (fetched when a tree box is clicked)."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        raise Http404("no snapshot")
    path = request.GET.get("queue", "")
    rows = data.queue_rows(scope.snapshot)
    row = next((r for r in rows if r.path == path), None)
    if row is None:
        raise Http404("unknown queue")
    return JsonResponse(charts.queue_bars_figure(row, data.resource_types_of(scope.snapshot, rows)))


# --------------------------------------------------------------------------- queue detail

ALLOCATION_SORTS = {
    "key": "key",
    "app": "app",
    "queue": "queue",
    "node": "node",
    "priority": "priority",
    "created": "created",
}
APPLICATION_SORTS = {"app": "app_id", "queue": "queue", "state": "state"}
#: Applications listed on a queue page (root of a big cluster has thousands).
APPLICATIONS_SHOWN = 200


@login_required
@require_GET
def queue_detail(request: HttpRequest) -> HttpResponse:
    """One queue: limits and usage over time, apps and allocations, changes, runs."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None or scope.partition is None:
        return _no_snapshot(request, "Queue")
    path = request.GET.get("queue", "root")
    queue = scope.snapshot.queues.filter(path=path).first()
    if queue is None:
        raise Http404("This queue is not in the snapshot in view.")
    rows = data.queue_rows(scope.snapshot)
    row = next(r for r in rows if r.path == path)
    types = data.resource_types_of(scope.snapshot, rows)
    points = data.usage_points(scope.partition, path)
    own_types = charts.resource_types([row]) or types[:2]

    allocs = scope.snapshot.allocations.filter(data.subtree_filter("queue", path))
    flt = forms.AllocationFilter(request.GET)
    if flt.is_valid():
        text = flt.cleaned_data.get("q") or ""
        if text:
            allocs = allocs.filter(
                Q(key__icontains=text) | Q(app__icontains=text) | Q(node__icontains=text)
            )
        if flt.cleaned_data.get("state") == "preempted":
            allocs = allocs.filter(preempted=True)
        elif flt.cleaned_data.get("state") == "running":
            allocs = allocs.filter(preempted=False)
        elif flt.cleaned_data.get("state") == "opted_out":
            allocs = allocs.filter(allow_preemption=False)
    allocs, sort, desc = _sorted(allocs, request, ALLOCATION_SORTS, "key")
    apps = scope.snapshot.applications.filter(data.subtree_filter("queue", path))
    app_sort = request.GET.get("app_sort", "app")
    if app_sort not in APPLICATION_SORTS:
        app_sort = "app"
    app_desc = request.GET.get("app_dir") == "desc"
    apps = apps.order_by(("-" if app_desc else "") + APPLICATION_SORTS[app_sort], "pk")
    app_total = apps.count()
    page = Paginator(allocs, 100).get_page(request.GET.get("page"))

    changes = models.QuotaChange.objects.filter(
        partition=scope.partition, queue_path=path
    ).select_related("created_by", "run")[:50]
    runs = (
        models.PreemptionRun.objects.filter(partition=scope.partition)
        .filter(Q(queue=path) | Q(victims__queue=path) | Q(victims__leaf=path))
        .distinct()
        .annotate(victim_count=Count("victims", distinct=True))
        .order_by("-queued_at", "-id")[:50]
    )
    active = any(c.state in models.QuotaChange.ACTIVE_STATES for c in changes) or any(
        r.status in RUN_ACTIVE for r in runs
    )
    return render(
        request,
        "dashboard/queue.html",
        {
            "title": path,
            "queue": queue,
            "row": row,
            "state": charts.queue_state(row),
            "state_label": charts.STATES[charts.queue_state(row)][0],
            "types": types,
            "measures": _measures(row, own_types),
            "usage_figure": charts.usage_over_time_figure(points, own_types),
            "bars_figure": charts.queue_bars_figure(row, own_types),
            "snapshot_points": len(points),
            "allocations": page,
            "allocation_count": page.paginator.count,
            "sort": sort,
            "desc": desc,
            "applications": apps[:APPLICATIONS_SHOWN],
            "application_total": app_total,
            "applications_shown": min(app_total, APPLICATIONS_SHOWN),
            "app_sort": app_sort,
            "app_desc": app_desc,
            "filter": flt,
            "changes": changes,
            "runs": runs,
            "live_active": active,
            "ancestors": _ancestors(path),
            "children": scope.snapshot.queues.filter(parent_path=path).order_by("path"),
        },
    )


def _ancestors(path: str) -> list[tuple[str, str]]:
    parts = path.split(".")
    return [(".".join(parts[: i + 1]), parts[i]) for i in range(len(parts) - 1)]


def _measures(row: charts.QueueRow, types: Sequence[str]) -> list[dict[str, str]]:
    """Per type: guaranteed, used, max, preemptable, scheduled max as text."""
    out = []
    for t in types:
        out.append(
            {
                "type": t,
                "guaranteed": display.format_quantity(t, (row.guaranteed or {}).get(t))
                if row.guaranteed is not None and t in row.guaranteed
                else "not defined",
                "used": display.format_quantity(t, row.used.get(t, 0)),
                "preempting": display.format_quantity(t, row.preempting.get(t, 0)),
                "max": display.format_quantity(t, row.max[t])
                if row.max is not None and t in row.max
                else "not defined",
                "preemptable": display.format_quantity(t, row.preemptable[t])
                if row.preemptable is not None and t in row.preemptable
                else "—",
                "lowered": display.format_quantity(t, row.lowered_max[t])
                if row.lowered_max is not None and t in row.lowered_max
                else "",
            }
        )
    return out


# --------------------------------------------------------------------------- nodes

NODE_SORTS = {"id": "node_id", "schedulable": "schedulable"}


@login_required
@require_GET
def nodes(request: HttpRequest) -> HttpResponse:
    """Utilisation per node and type, and the allocations on one node."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return _no_snapshot(request, "Nodes")
    node_rows = data.node_rows(scope.snapshot)
    types = sorted({t for n in node_rows for t in n.capacity}, key=_type_key)
    text = request.GET.get("q", "").strip()
    shown = [n for n in node_rows if text.lower() in n.id.lower()] if text else node_rows
    highlight = [request.GET["node"]] if request.GET.get("node") else []
    selected = request.GET.get("node", "")
    allocations = (
        scope.snapshot.allocations.filter(node=selected).order_by("queue", "key")
        if selected
        else None
    )
    table = [
        {
            "id": n.id,
            "schedulable": n.schedulable,
            "cells": [
                {
                    "type": t,
                    "used": display.format_quantity(t, n.allocated.get(t, 0)),
                    "cap": display.format_quantity(t, n.capacity[t]) if t in n.capacity else "—",
                    "pct": round(100 * n.allocated.get(t, 0) / n.capacity[t])
                    if n.capacity.get(t)
                    else None,
                }
                for t in types
            ],
        }
        for n in shown[:500]
    ]
    return render(
        request,
        "dashboard/nodes.html",
        {
            "title": "Nodes",
            "heatmap": charts.node_heatmap_figure(shown, types, highlight=highlight),
            "types": types,
            "table": table,
            "node_total": len(node_rows),
            "shown_total": len(shown),
            "selected": selected,
            "allocations": allocations,
            "q": text,
        },
    )


def _type_key(t: str) -> tuple[int, str]:
    return ({"vcore": 0, "memory": 1}.get(t, 2), t)


# --------------------------------------------------------------------------- history


@login_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    """Every run as a Plotly timeline and a filtered table."""
    scope = scope_mod.resolve(request)
    flt = forms.HistoryFilter(request.GET)
    params = {k: v for k, v in request.GET.items() if isinstance(v, str)}
    runs = (
        data.filtered_runs(scope.partition, params)
        .annotate(victim_count=Count("victims"))
        .order_by("-queued_at", "-id")
    )
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    timeline = charts.history_timeline_figure(data.run_rows(runs[:2000]))
    active = runs.filter(status__in=RUN_ACTIVE).exists()
    export = reverse("history_csv") + "?" + request.GET.urlencode()
    return render(
        request,
        "dashboard/history.html",
        {
            "title": "History",
            "filter": flt,
            "runs": page,
            "run_total": page.paginator.count,
            "timeline": timeline,
            "live_active": active,
            "export_url": export,
            "filter_query": _without(request, "page"),
        },
    )


def _without(request: HttpRequest, *keys: str) -> str:
    q = request.GET.copy()
    for key in keys:
        q.pop(key, None)
    return q.urlencode()


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
@require_GET
def history_csv(request: HttpRequest) -> StreamingHttpResponse:
    """The filtered history as CSV (one row per run)."""
    scope = scope_mod.resolve(request)
    params = {k: v for k, v in request.GET.items() if isinstance(v, str)}
    runs = (
        data.filtered_runs(scope.partition, params)
        .annotate(victim_count=Count("victims"))
        .select_related("partition")
        .order_by("queued_at", "id")
    )
    writer = csv.writer(_Echo())
    header = [
        "id", "partition", "snapshot", "kind", "trigger", "status", "outcome", "queue",
        "victims", "target", "claimed", "alerts", "queued_at", "started_at", "finished_at",
        "engine_ms", "error",
    ]  # fmt: skip

    def rows() -> Any:
        yield writer.writerow(header)
        for run in runs.iterator(chunk_size=500):
            yield writer.writerow(
                [
                    run.pk,
                    run.partition.name,
                    run.snapshot_id or "",
                    run.kind,
                    run.trigger,
                    run.status,
                    run.outcome,
                    _csv_safe(run.queue),
                    getattr(run, "victim_count", 0),
                    display.format_resource(run.target, empty=""),
                    display.format_resource(run.claimed, empty=""),
                    _csv_safe(" | ".join(str(a) for a in run.alerts or [])),
                    run.queued_at.isoformat(),
                    run.started_at.isoformat() if run.started_at else "",
                    run.finished_at.isoformat() if run.finished_at else "",
                    "" if run.engine_ms is None else f"{run.engine_ms:.1f}",
                    _csv_safe(run.error),
                ]
            )

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="preemption-runs-{stamp}.csv"'
    return response


def _csv_safe(text: str) -> str:
    """Defuse spreadsheet formulas in user text (a cell starting with = + - @)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: request, answer, victims, claimed against target, alerts, timings."""
    run = get_object_or_404(
        models.PreemptionRun.objects.select_related("partition", "snapshot", "created_by").defer(
            "snapshot__scenario"
        ),
        pk=pk,
    )
    victims = list(run.victims.order_by("position"))
    context: dict[str, object] = {
        "title": f"Run {run.pk}",
        "run": run,
        "victims": victims,
        "live_active": run.status in RUN_ACTIVE,
        "changes": run.changes.all(),
        "alert_rows": run.alert_rows.order_by("-created_at"),
        "elapsed": _elapsed(run),
    }
    context.update(_run_figures(run, victims))
    return render(request, "dashboard/run.html", context)


def _elapsed(run: models.PreemptionRun) -> float | None:
    start = run.started_at or run.queued_at
    end = run.finished_at or timezone.now()
    return max(0.0, (end - start).total_seconds())


def _run_figures(
    run: models.PreemptionRun, victims: Sequence[models.RunVictim]
) -> dict[str, object]:
    """Figures for a finished run: the plan (quota) or the highlighted tree and nodes."""
    out: dict[str, object] = {}
    result = run.result if isinstance(run.result, dict) else None
    if result is None or run.snapshot is None:
        return out
    if run.kind in (
        models.PreemptionRun.Kind.WHATIF_QUOTA,
        models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
    ):
        out["plan_figure"] = charts.quota_plan_figure(result)
        out["leaves"] = _leaves(result)
    victim_queues = {v.leaf or v.queue for v in victims}
    victim_nodes = {v.node for v in victims if v.node}
    fence = result.get("fence") if isinstance(result.get("fence"), str) else None
    rows = data.queue_rows(run.snapshot, with_preemptable=False)
    if len(rows) <= 3000:
        out["tree_figure"] = charts.queue_tree_figure(
            rows, fence=cast(str | None, fence), victim_queues=victim_queues
        )
    if victim_nodes:
        node_rows = [n for n in data.node_rows(run.snapshot) if n.id in victim_nodes]
        out["nodes_figure"] = charts.node_heatmap_figure(node_rows, highlight=victim_nodes)
    return out


def _leaves(result: Mapping[str, object]) -> list[dict[str, object]]:
    leaves = result.get("leaves")
    if not isinstance(leaves, Mapping):
        return []
    out = []
    for path in sorted(leaves):
        leaf = leaves[path]
        if isinstance(leaf, Mapping):
            out.append(
                {
                    "path": path,
                    "preemptable": leaf.get("preemptable"),
                    "claimed": leaf.get("claimed"),
                    "victims": leaf.get("victims") or [],
                }
            )
    return out


# --------------------------------------------------------------------------- alerts


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
    return HttpResponseRedirect(_next(request, reverse("alerts")))


@require_POST
@staff_required
def alert_ack_all(request: HttpRequest) -> HttpResponse:
    """Acknowledge every unread alert (staff only)."""
    n = services.acknowledge_all_alerts(user=request.user)
    messages.success(request, f"{n} alert{'s' if n != 1 else ''} acknowledged.")
    return HttpResponseRedirect(_next(request, reverse("alerts")))


def _next(request: HttpRequest, default: str) -> str:
    """A same-site ``next`` URL from the form, else *default*."""
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


# --------------------------------------------------------------------------- config versions


@login_required
@require_GET
def configs(request: HttpRequest) -> HttpResponse:
    """Every imported config version of the partition, with who and when."""
    scope = scope_mod.resolve(request)
    versions = models.ConfigVersion.objects.select_related("imported_by", "partition")
    if scope.partition is not None:
        versions = versions.filter(partition=scope.partition)
    versions = versions.annotate(
        change_count=Count("changes", distinct=True),
        run_count=Count("changes__run", distinct=True),
    ).order_by("-number", "-id")
    return render(
        request, "dashboard/configs.html", {"title": "Config versions", "versions": versions}
    )


@login_required
@require_GET
def config_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One config version: its text, warnings, the changes it made and the runs they led to."""
    version = get_object_or_404(
        models.ConfigVersion.objects.select_related("partition", "imported_by"), pk=pk
    )
    previous = (
        models.ConfigVersion.objects.filter(partition=version.partition, number__lt=version.number)
        .order_by("-number")
        .first()
    )
    changes = version.changes.select_related("run").order_by("queue_path", "id")
    return render(
        request,
        "dashboard/config.html",
        {
            "title": f"Config v{version.number}",
            "version": version,
            "previous": previous,
            "changes": changes,
            "queue_changes": _config_changes(version, previous),
        },
    )


@login_required
@require_GET
def config_diff(request: HttpRequest) -> HttpResponse:
    """A readable diff between any two config versions: queue changes and the text."""
    a = get_object_or_404(models.ConfigVersion, pk=_int(request.GET.get("a")) or 0)
    b = get_object_or_404(models.ConfigVersion, pk=_int(request.GET.get("b")) or 0)
    lines = _text_diff(a.text, b.text)
    return render(
        request,
        "dashboard/config_diff.html",
        {
            "title": f"Config v{a.number} → v{b.number}",
            "a": a,
            "b": b,
            "lines": lines,
            "queue_changes": _config_changes(b, a),
            "changes": models.QuotaChange.objects.filter(config_version=b)
            .select_related("run")
            .order_by("queue_path", "id"),
            "versions": models.ConfigVersion.objects.filter(partition=b.partition).order_by(
                "-number"
            ),
        },
    )


def _text_diff(old: str, new: str) -> list[dict[str, object]]:
    """A unified diff (3 lines of context) as rows for the template."""
    out: list[dict[str, object]] = []
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    a_lines, b_lines = old.splitlines(), new.splitlines()
    for group in matcher.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        old_span = f"-{first[1] + 1},{last[2] - first[1]}"
        new_span = f"+{first[3] + 1},{last[4] - first[3]}"
        out.append({"kind": "hunk", "text": f"@@ {old_span} {new_span} @@"})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    out.append(
                        {"kind": "same", "a": i1 + k + 1, "b": j1 + k + 1, "text": a_lines[i1 + k]}
                    )
                continue
            for k in range(i1, i2):
                out.append({"kind": "del", "a": k + 1, "b": "", "text": a_lines[k]})
            for k in range(j1, j2):
                out.append({"kind": "add", "a": "", "b": k + 1, "text": b_lines[k]})
    return out


def _config_changes(
    version: models.ConfigVersion, other: models.ConfigVersion | None
) -> list[dict[str, object]]:
    """The importers' semantic diff (queues added/removed, limits, delays, properties)."""
    if other is None or other.pk == version.pk:
        return []
    try:
        return services.config_diff(version, other)
    except services.ServiceError as exc:
        return [{"queue": "", "field": "error", "text": exc.message, "is_decrease": False}]


# --------------------------------------------------------------------------- scheduled changes


@login_required
@require_GET
def changes(request: HttpRequest) -> HttpResponse:
    """Scheduled quota changes with a live countdown per waiting change."""
    scope = scope_mod.resolve(request)
    state = request.GET.get("state", "")
    rows = models.QuotaChange.objects.select_related("created_by", "run", "partition")
    if scope.partition is not None:
        rows = rows.filter(partition=scope.partition)
    if state == "active":
        rows = rows.filter(state__in=models.QuotaChange.ACTIVE_STATES)
    elif state:
        rows = rows.filter(state=state)
    queue = request.GET.get("queue", "").strip()
    if queue:
        rows = rows.filter(data.subtree_filter("queue_path", queue))
    rows = rows.order_by("-changed_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    active = (
        models.QuotaChange.objects.filter(state__in=models.QuotaChange.ACTIVE_STATES).exists()
        or models.PreemptionRun.objects.filter(status__in=RUN_ACTIVE).exists()
    )
    return render(
        request,
        "dashboard/changes.html",
        {
            "title": "Scheduled changes",
            "changes": page,
            "state": state,
            "queue": queue,
            "states": models.QuotaChange.State.choices,
            "live_active": active,
            "form": forms.ChangeForm(types=_known_types(scope)),
            "paths": data.all_paths(scope.snapshot) if scope.snapshot else [],
        },
    )


def _known_types(scope: scope_mod.Scope) -> list[str]:
    if scope.snapshot is None:
        return ["vcore", "memory"]
    rows = data.queue_rows(scope.snapshot, with_preemptable=False)
    return data.resource_types_of(scope.snapshot, rows) or ["vcore", "memory"]


@require_POST
@staff_required
def change_create(request: HttpRequest) -> HttpResponse:
    """Schedule a change of a queue's max / delay (from the what-if plan or the form)."""
    scope = scope_mod.resolve(request)
    if scope.partition is None:
        raise Http404("no partition")
    form = forms.ChangeForm(request.POST, types=_known_types(scope))
    if not form.is_valid():
        messages.error(request, form.error_text())
        return redirect(_next(request, _scoped("changes", request)))
    try:
        change = services.schedule_quota_change(
            scope.partition,
            form.cleaned_data["queue"],
            user=request.user,
            snapshot=scope.snapshot,
            **form.change_kwargs(),
        )
    except services.ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect(_next(request, _scoped("changes", request)))
    messages.success(request, _change_message(change))
    return redirect(_scoped("changes", request, highlight=change.pk))


def _change_message(change: models.QuotaChange) -> str:
    if change.state == models.QuotaChange.State.WAITING and change.deadline:
        return (
            f"Change {change.pk} for {change.queue_path} scheduled: the timer fires at "
            f"{change.deadline:%Y-%m-%d %H:%M:%S} UTC."
        )
    return f"Change {change.pk} for {change.queue_path} saved: {change.reason}"


@login_required
@require_safe
def change_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One scheduled change: its timer, what it replaced, the run it led to, its config patch."""
    change = get_object_or_404(
        models.QuotaChange.objects.select_related(
            "partition", "created_by", "run", "superseded_by", "config_version"
        ),
        pk=pk,
    )
    return render(
        request,
        "dashboard/change.html",
        {
            "title": f"Change {change.pk}",
            "change": change,
            "supersedes": change.supersedes.order_by("-changed_at", "-id"),
            "alert_rows": change.alerts.order_by("-created_at", "-id"),
            "live_active": change.state in models.QuotaChange.ACTIVE_STATES,
        },
    )


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def change_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Edit a waiting change: saving records a new change and resets the timer (confirmed)."""
    change = get_object_or_404(models.QuotaChange.objects.select_related("partition"), pk=pk)
    scope = scope_mod.resolve(request)
    types = _known_types(scope)
    if change.state != models.QuotaChange.State.WAITING:
        messages.error(
            request,
            f"Change {change.pk} is {change.get_state_display().lower()}: "
            "only a waiting change can be edited.",
        )
        return redirect(_scoped("changes", request))
    if request.method == "POST":
        form = forms.ChangeForm(request.POST, types=types, confirm=True)
        if form.is_valid():
            try:
                new = services.schedule_quota_change(
                    change.partition,
                    change.queue_path,
                    user=request.user,
                    **form.change_kwargs(),
                )
            except services.ServiceError as exc:
                form.add_error(None, f"{exc.field}: {exc.message}")
            else:
                messages.success(request, _change_message(new))
                return redirect(_scoped("changes", request, highlight=new.pk))
    else:
        form = forms.ChangeForm.for_change(change, types)
    return render(
        request,
        "dashboard/change_edit.html",
        {"title": f"Edit change {change.pk}", "change": change, "form": form},
    )


@require_POST
@staff_required
def change_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a waiting change: its timer stops and the current max stays."""
    change = get_object_or_404(models.QuotaChange, pk=pk)
    try:
        services.cancel_quota_change(change, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Change {change.pk} for {change.queue_path} cancelled.")
    return redirect(_next(request, _scoped("changes", request)))


# --------------------------------------------------------------------------- what-if


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def whatif(request: HttpRequest) -> HttpResponse:
    """Ask the engine: a pending or typed ask, or a queue with a lower max."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return _no_snapshot(request, "What-if")
    snapshot = scope.snapshot
    types = _known_types(scope)
    leaves = data.leaf_paths(snapshot)
    paths = data.all_paths(snapshot)
    asks = list(snapshot.asks.order_by("queue", "key"))
    run_id = _int(request.GET.get("run"))
    run = (
        models.PreemptionRun.objects.select_related("snapshot", "partition")
        .defer("snapshot__scenario")
        .filter(pk=run_id)
        .first()
        if run_id
        else None
    )
    preempt_form = forms.PreemptForm(
        asks=asks, leaves=leaves, types=types, initial=_preempt_initial(run, asks)
    )
    quota_form = forms.QuotaForm(paths=paths, types=types, initial=_quota_initial(request, run))
    # both forms have a "queue" field: distinct element ids keep labels and tests unambiguous
    if request.method == "POST":
        if not request.user.is_staff:
            raise PermissionDenied("Only staff users can run what-ifs.")
        kind = request.POST.get("kind")
        try:
            if kind == "preempt":
                preempt_form = forms.PreemptForm(
                    request.POST, asks=asks, leaves=leaves, types=types
                )
                if preempt_form.is_valid():
                    run = services.create_run(
                        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
                        snapshot=snapshot,
                        request=preempt_form.run_request(),
                        user=request.user,
                        trigger=models.PreemptionRun.Trigger.MANUAL,
                    )
                    return redirect(_scoped("whatif", request, run=run.pk))
            elif kind == "quota":
                quota_form = forms.QuotaForm(request.POST, paths=paths, types=types)
                if quota_form.is_valid():
                    run = services.create_run(
                        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
                        snapshot=snapshot,
                        request=quota_form.run_request(),
                        user=request.user,
                        trigger=models.PreemptionRun.Trigger.MANUAL,
                    )
                    return redirect(_scoped("whatif", request, run=run.pk))
            else:
                messages.error(request, "Choose a what-if: a pending ask or a quota decrease.")
        except services.ServiceError as exc:
            form = preempt_form if kind == "preempt" else quota_form
            form.add_error(None, f"{exc.field}: {exc.message}")
    context: dict[str, object] = {
        "title": "What-if",
        "preempt_form": preempt_form,
        "quota_form": quota_form,
        "asks": asks,
        "run": run,
        "live_active": run is not None and run.status in RUN_ACTIVE,
        "types": types,
    }
    if run is not None:
        victims = list(run.victims.order_by("position"))
        context["victims"] = victims
        context["elapsed"] = _elapsed(run)
        context.update(_run_figures(run, victims))
        if run.kind == models.PreemptionRun.Kind.WHATIF_QUOTA and run.status == "done":
            context["schedule_form"] = forms.ChangeForm.for_plan(run, types)
    return render(request, "dashboard/whatif.html", context)


def _quota_initial(request: HttpRequest, run: models.PreemptionRun | None) -> dict[str, object]:
    """The quota form starts at ``?queue=`` or at the queue of the what-if shown."""
    if run is not None and run.kind == models.PreemptionRun.Kind.WHATIF_QUOTA:
        initial: dict[str, object] = {"queue": run.queue}
        new_max = run.request.get("new_max") if isinstance(run.request, dict) else None
        for t, q in (new_max or {}).items():
            initial[f"max__{t}"] = quantities.format_quantity(int(q), str(t))
        return initial
    queue = request.GET.get("queue")
    return {"queue": queue} if queue else {}


def _preempt_initial(
    run: models.PreemptionRun | None, asks: Sequence[models.PendingAsk]
) -> dict[str, object]:
    """The preempt form starts at the ask of the what-if shown, else the first pending ask."""
    if run is not None and isinstance(run.request, dict) and run.request.get("ask_key"):
        return {"ask_key": run.request["ask_key"]}
    return {"ask_key": asks[0].key} if asks else {}


# --------------------------------------------------------------------------- victims explained

#: Candidates listed per leaf (the rest are counted): a big leaf has thousands.
VICTIMS_PER_LEAF = 200


@login_required
@require_GET
def victims(request: HttpRequest) -> HttpResponse:
    """A queue's current victim candidates in the engine's order, with reasons and exclusions."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return _no_snapshot(request, "Victims")
    path = request.GET.get("queue", "root")
    if not scope.snapshot.queues.filter(path=path).exists():
        raise Http404("This queue is not in the snapshot in view.")
    explanation = services.explain_victims(scope.snapshot, path, limit=VICTIMS_PER_LEAF)
    return render(
        request,
        "dashboard/victims.html",
        {
            "title": f"Victims in {path}",
            "path": path,
            "explanation": explanation,
            "ancestors": _ancestors(path),
        },
    )


# --------------------------------------------------------------------------- import


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload a queue config or a snapshot (scenario JSON, REST files, state dump)."""
    form = forms.ImportForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                target = _import(request, form)
            except services.ServiceError as exc:
                form.add_error(None, f"{exc.field}: {exc.message}" if exc.field else exc.message)
                status = 413 if isinstance(exc, services.UploadTooLarge) else 400
            else:
                if request.headers.get("x-requested-with") == "XMLHttpRequest":
                    # the upload script navigates itself, so the flash messages survive
                    return JsonResponse({"location": target})
                return redirect(target)
        else:
            status = 400
    recent = (
        models.ClusterSnapshot.objects.select_related("partition", "imported_by")
        .defer("scenario")
        .order_by("-imported_at", "-id")[:10]
    )
    recent_configs = models.ConfigVersion.objects.select_related(
        "partition", "imported_by"
    ).order_by("-imported_at", "-id")[:10]
    return render(
        request,
        "dashboard/import.html",
        {"title": "Import", "form": form, "recent": recent, "recent_configs": recent_configs},
        status=status,
    )


def _import(request: HttpRequest, form: forms.ImportForm) -> str:
    """Run the chosen importer; returns the URL that shows the result."""
    files = request.FILES.getlist("upload")
    for upload in files:  # refuse an oversized file before reading it into memory
        services.check_upload_size(upload.name or "upload", upload.size or 0)
    partition = form.cleaned_data.get("partition") or None
    if form.cleaned_data["kind"] == "config":
        upload = files[0]
        result = services.import_config(
            upload.read(),
            filename=upload.name or "queues.yaml",
            user=request.user,
            partition=partition,
        )
        for version in result.versions:
            messages.success(request, f"Imported {version}.")
            for warning in version.warnings or []:
                messages.warning(request, str(warning))
        for change in result.changes:
            messages.info(request, _change_message(change))
        return reverse("config", args=[result.versions[0].pk])
    snapshot = services.import_snapshot(
        {upload.name or f"file{i}": upload.read() for i, upload in enumerate(files)},
        user=request.user,
        partition=partition,
    )
    messages.success(request, f"Imported snapshot {snapshot.pk} of {snapshot.partition.name}.")
    for warning in snapshot.warnings or []:
        messages.warning(request, str(warning))
    return f"{reverse('tree')}?partition={snapshot.partition.name}&snapshot={snapshot.pk}"
