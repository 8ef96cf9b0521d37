"""The queue pages: the tree, one queue's detail, why an allocation would (not) be a victim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html_join, json_script
from django.utils.safestring import SafeString
from django.views.decorators.http import (
    require_GET,
)

from dashboard import display, models, services
from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.access.pages import DENIED
from dashboard.charts.compact import compact_hover
from dashboard.charts.queues import (
    levels_shown,
    queue_bars_figure,
    queue_state,
    queue_tree_figure,
    usage_over_time_figure,
)
from dashboard.charts.style import STATE_MARKS, STATES
from dashboard.charts.values import QueueRow, resource_types
from dashboard.pages import data, forms
from dashboard.pages import scope as scope_mod
from dashboard.pages.memo import Memo
from dashboard.pages.queue_list import queue_list_html
from dashboard.pages.queue_tables import allocation_rows_html, application_rows_html
from dashboard.pages.tenant_tree import tenant_rows
from dashboard.pages.views.common import RUN_ACTIVE, int_param, no_snapshot, sorted_by


@login_required
@require_GET
def tree(request: HttpRequest) -> HttpResponse:
    """The queue hierarchy as an icicle plus the selected queue's bars."""
    scope = scope_mod.resolve(request)
    config = None
    if scope.snapshot is None:
        config = services.latest_config(scope.partition) if scope.partition else None
        if config is None:
            return no_snapshot(request, "Queue tree")
    waiting_key: data.ChangesKey = ()
    if scope.snapshot is not None:
        snapshot = scope.snapshot
        waiting = data.waiting_changes(snapshot.partition)
        # everything the rows depend on besides the snapshot: the waiting changes' maxima
        # (planned or applied: the hover says which)
        waiting_key = data.changes_key(waiting)

        def build_rows() -> _TreeRows:
            rows = data.queue_rows(snapshot, changes=waiting)
            return _tree_rows(rows, data.resource_types_of(snapshot, rows))

        tree_rows = _TREE_ROWS_MEMO.get((data.snapshot_key(snapshot), waiting_key), build_rows)
    elif config is not None and scope.partition is not None:
        # a config but no cluster state yet: the configured tree, without usage
        waiting = data.waiting_changes(scope.partition)
        rows = _config_rows(config)
        tree_rows = _tree_rows(rows, resource_types(rows))
    else:
        return no_snapshot(request, "Queue tree")
    if scoping.is_tenant(request.user):  # its own queues; the others as their share
        access = access_for(request.user, scope.partition)
        tree_rows = _tree_rows(tenant_rows(tree_rows[0], access), tree_rows[1])
        waiting = {q: c for q, c in waiting.items() if access.may_view(q)}
    rows, types, paths, datalist = tree_rows
    rtype = request.GET.get("type") or None
    if rtype not in types:
        rtype = None
    selected = request.GET.get("queue") or "root"
    if selected not in paths:
        selected = rows[0].path if rows else "root"
    depth = int_param(request.GET.get("depth"))
    if depth is None:
        depth = levels_shown(len(rows))
    level = request.GET.get("queue") if request.GET.get("queue") in paths else None
    selected_row = paths.get(selected)
    bars_fig = queue_bars_figure(selected_row, types) if selected_row else None

    def build() -> _TreeParts:
        return _tree_parts(rows, rtype, depth, level, selected, scope)

    if scope.snapshot is not None:
        # a snapshot never changes: the finished figure and list are kept per process,
        # keyed by everything they depend on (the waiting changes included)
        key = (
            data.snapshot_key(scope.snapshot),
            rtype,
            depth,
            level,
            selected,
            scope.query(),
            waiting_key,
            scoping.read_scope_key(request.user),
        )
        tree_fig, counts, queue_list = _TREE_MEMO.get(key, build)
        # the timers' list: its links carry the scope; the changes are in waiting_key
        deadlines = tuple(str(c.deadline) for _, c in sorted(waiting.items()))
        timers = _TIMERS_MEMO.get(
            (waiting_key, deadlines, scope.query(), tuple(waiting)),
            lambda: _timers_html(scope, waiting),
        )
    else:
        tree_fig, counts, queue_list = build()
        timers = _timers_html(scope, waiting)
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
            "paths": datalist,
            "depth": depth,
            "queue_count": len(rows),
            "leaf_count": data.leaf_count(scope.snapshot)
            if scope.snapshot
            else sum(1 for p in paths if not any(o.startswith(p + ".") for o in paths)),
            "node_count": data.node_count(scope.snapshot) if scope.snapshot else 0,
            "config": config,
            "states": [
                (key, label, colour, counts[key], STATE_MARKS[key])
                for key, (label, colour) in STATES.items()
            ],
            "queue_list": queue_list,
            "waiting": waiting,
            "timers": timers,
        },
    )


#: The tree figure as the page's ``<script type="application/json">``, the count per
#: state and the queue list.
_TreeParts = tuple[SafeString, dict[str, int], SafeString]

#: Finished tree figures and queue lists (each as big as the page's figure: few kept).
_TREE_MEMO: Memo[_TreeParts] = Memo(8)

#: A snapshot's rows as drawn (waiting changes applied), its resource types, the rows
#: by path, and the search box's list of paths as HTML.
_TreeRows = tuple[list[QueueRow], list[str], dict[str, QueueRow], SafeString]

#: Tree rows per snapshot and waiting changes (a big tree's rows are slow to build).
_TREE_ROWS_MEMO: Memo[_TreeRows] = Memo(8)

#: The "Timers running" list as HTML, per waiting changes (whether each is only planned
#: here is in their key; their deadlines besides) and scope.
_TIMERS_MEMO: Memo[SafeString] = Memo(32)


def _tree_rows(rows: list[QueueRow], types: list[str]) -> _TreeRows:
    datalist = format_html_join("", '<option value="{}">', ((r.path,) for r in rows))
    return rows, types, {r.path: r for r in rows}, datalist


def _timers_html(scope: scope_mod.Scope, waiting: dict[str, data.WaitingChange]) -> SafeString:
    """The waiting changes with their countdowns (empty when none): nothing of the user's."""
    if not waiting:
        return SafeString("")
    return SafeString(
        render_to_string(
            "dashboard/_tree_timers.html",
            {
                "scope": scope,
                "waiting": waiting,
                "any_planned": any(c.planned for c in waiting.values()),
            },
        )
    )


def _tree_parts(
    rows: Sequence[QueueRow],
    rtype: str | None,
    depth: int,
    level: str | None,
    selected: str,
    scope: scope_mod.Scope,
) -> _TreeParts:
    """The tree figure (hover text compact), the count per state and the queue list."""
    # the page's script joins the hover text back from its distinct pieces
    tree_fig = json_script(
        compact_hover(queue_tree_figure(rows, rtype, maxdepth=depth, level=level)), "tree-figure"
    )
    counts: dict[str, int] = {state: 0 for state in STATES}
    items = []
    tree_url = reverse("tree")  # one link per queue: built here, not by a tag per row
    for r in rows:
        state = queue_state(r, rtype)
        counts[state] += 1
        items.append(
            {
                "href": f"{tree_url}?{scope.query(queue=r.path, type=rtype)}",
                "path": r.path,
                "name": r.name,
                "depth": r.path.count("."),
                "state": state,
                "label": STATES[state][0],
                "mark": STATE_MARKS[state],
                "status": r.status,
                "dynamic": r.dynamic,
            }
        )
    return tree_fig, counts, queue_list_html(items, selected)


@dataclass(frozen=True, slots=True)
class MaxInForce:
    """A queue's max in force in the cluster, where it comes from, and a planned one."""

    max: dict[str, int] | None
    words: str
    has_planned: bool = False
    planned_max: dict[str, int] | None = None


def max_in_force(
    queue: models.SnapshotQueue,
    changes: Sequence[models.QuotaChange],
    runs: Sequence[models.PreemptionRun],
) -> MaxInForce:
    """The max the cluster runs for *queue*: the snapshot's, then what the cluster was
    seen doing since its capture (a change applied there, the scheduler's own quota
    preemption), the latest winning; and the queue's newest change when it is only
    planned here (not yet seen in a config from the cluster).

    From the rows the queue page has already read (its changes and runs): no query.
    """
    captured = queue.snapshot.captured_at
    found: list[tuple[datetime, dict[str, int] | None, str]] = [
        (captured, queue.max, f"the snapshot's, as captured {display.format_datetime(captured)}")
    ]
    skipped = (models.QuotaChange.State.CANCELLED, models.QuotaChange.State.PENDING)
    # in the order they were recorded: a change retimed by the scheduler's clock (changed
    # and applied earlier than the import that recorded it) stays newer than the changes
    # it replaced, whose applied time may be only their import's
    live = sorted((c for c in changes if c.state not in skipped), key=lambda c: -c.pk)
    applied = next((c for c in live if c.applied_at is not None), None)
    if applied is not None and applied.applied_at is not None and applied.applied_at > captured:
        found.append(
            (applied.applied_at, applied.new_max, f"change {applied.pk}, applied in the cluster")
        )
    planned = live[0] if live and live[0].is_planned else None
    for r in runs:
        if (
            r.nature == models.PreemptionRun.Nature.OBSERVED
            and r.kind == "quota"
            and (r.queued_at > captured and r.queue == queue.path)
        ):
            enforced = (r.request or {}).get("max") or None
            found.append((r.queued_at, enforced, f"observed: the scheduler's quota run {r.pk}"))
    _, maximum, words = max(found, key=lambda f: f[0])
    if planned is not None and planned.new_max != maximum:
        return MaxInForce(maximum, words, True, planned.new_max)
    return MaxInForce(maximum, words)


def _config_rows(config: models.ConfigVersion) -> list[QueueRow]:
    """The queues of a config version as tree rows: limits, no usage."""
    return [
        QueueRow(path=q.path, guaranteed=q.guaranteed, max=q.max)
        for q in config.queues.order_by("path")
    ]


@login_required
@require_GET
def tree_bars(request: HttpRequest) -> JsonResponse:
    """The per-queue bars figure for ``?queue=`` (fetched when a tree box is clicked)."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        raise Http404("no snapshot")
    path = request.GET.get("queue", "")
    if scoping.is_tenant(request.user):
        return JsonResponse(_tenant_bars(request, scope.snapshot, path))
    row = data.queue_row(scope.snapshot, path)
    if row is None:
        raise Http404("unknown queue")
    return JsonResponse(queue_bars_figure(row, data.resource_types_of(scope.snapshot, [row])))


def _tenant_bars(
    request: HttpRequest, snapshot: models.ClusterSnapshot, path: str
) -> dict[str, object]:
    """The bars of *path* as the tenant's tree shows it: its queues whole, an ancestor's
    aggregate, a folded ``(other queues)`` box as its share; 403 for any other path
    (a hidden queue answers as an unknown one)."""
    access = access_for(request.user, snapshot.partition)
    waiting = data.waiting_changes(snapshot.partition)
    rows = data.queue_rows(snapshot, changes=waiting)
    row = next((r for r in tenant_rows(rows, access) if r.path == path), None)
    if row is None:
        raise PermissionDenied(DENIED)
    return queue_bars_figure(row, data.resource_types_of(snapshot, [row]))


ALLOCATION_SORTS = {
    "key": "key",
    "pod": "pod",
    "app": "app",
    "queue": "queue",
    "node": "node",
    "priority": "priority",
    "created": "created",
}


APPLICATION_SORTS = {"app": "app_id", "queue": "queue", "state": "state"}


#: Applications listed on a queue page (root of a big cluster has thousands).
APPLICATIONS_SHOWN = 200

#: The queue page's table rows as HTML (a few kB each; 1,000 queues x pages, sorts).
_QUEUE_TABLES_MEMO: Memo[SafeString] = Memo(512)


@login_required
@require_GET
def queue_detail(request: HttpRequest) -> HttpResponse:
    """One queue: limits and usage over time, apps and allocations, changes, runs."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None or scope.partition is None:
        return no_snapshot(request, "Queue")
    path = request.GET.get("queue", "root")
    queue = scope.snapshot.queues.filter(path=path).first()
    if queue is None:
        raise Http404(
            f"Queue {path!r} is not in snapshot {scope.snapshot.pk} of {scope.partition.name!r}."
        )
    # this queue's row only; the snapshot's resource types are cached per snapshot
    row = data.queue_row(scope.snapshot, path)
    assert row is not None  # the queue was found above
    types = data.resource_types_of(scope.snapshot, [row])
    points = data.usage_points(scope.partition, path)
    own_types = resource_types([row]) or types[:2]

    allocs = services.snapshot_allocations(scope.snapshot)
    allocs = allocs.filter(data.subtree_filter("queue", path))
    flt = forms.AllocationFilter(request.GET)
    text = state = ""
    if flt.is_valid():
        text = flt.cleaned_data.get("q") or ""
        state = flt.cleaned_data.get("state") or ""
        if text:
            allocs = allocs.filter(
                Q(key__icontains=text)
                | Q(pod__icontains=text)
                | Q(app__icontains=text)
                | Q(node__icontains=text)
            )
        if flt.cleaned_data.get("state") == "preempted":
            allocs = allocs.filter(preempted=True)
        elif flt.cleaned_data.get("state") == "running":
            allocs = allocs.filter(preempted=False)
        elif flt.cleaned_data.get("state") == "opted_out":
            allocs = allocs.filter(allow_preemption=False)
    allocs, sort, desc = sorted_by(allocs, request, ALLOCATION_SORTS, "key")
    apps = services.snapshot_applications(scope.snapshot).filter(data.subtree_filter("queue", path))
    app_sort = request.GET.get("app_sort", "app")
    if app_sort not in APPLICATION_SORTS:
        app_sort = "app"
    app_desc = request.GET.get("app_dir") == "desc"
    apps = apps.order_by(("-" if app_desc else "") + APPLICATION_SORTS[app_sort], "pk")
    # a snapshot never changes: its counts are counted once per process
    app_total = data.snapshot_count(scope.snapshot, ("apps", path), apps.count)
    paginator = Paginator(allocs, 100)
    paginator.count = data.snapshot_count(
        scope.snapshot, ("allocations", path, text, state), allocs.count
    )
    page = paginator.get_page(request.GET.get("page"))
    # a snapshot never changes: the tables' rows are kept per process, keyed by all
    # they show (the queue, filter, sort, page) and the scope their links carry
    snap = data.snapshot_key(scope.snapshot)
    allocation_rows = _QUEUE_TABLES_MEMO.get(
        ("allocations", snap, path, text, state, sort, desc, page.number, scope.query()),
        lambda: allocation_rows_html(page.object_list, scope),
    )
    application_rows = _QUEUE_TABLES_MEMO.get(
        ("applications", snap, path, app_sort, app_desc, scope.query()),
        lambda: application_rows_html(apps[:APPLICATIONS_SHOWN], scope),
    )

    changes = models.QuotaChange.objects.filter(
        partition=scope.partition, queue_path=path
    ).select_related("created_by", "run")[:50]
    runs = (
        # a tenant: only runs of queues it may view (another tenant's run taking victims
        # here would name that tenant's queue)
        scoping.filter_viewable_runs(
            models.PreemptionRun.objects.filter(partition=scope.partition), request.user
        )
        .filter(Q(queue=path) | Q(victims__queue=path) | Q(victims__leaf=path))
        .distinct()
        .annotate(victim_count=Count("victims", distinct=True))
        .order_by("-queued_at", "-id")[:50]
    )
    active = any(c.state in models.QuotaChange.ACTIVE_STATES for c in changes) or any(
        r.status in RUN_ACTIVE for r in runs
    )
    in_force = max_in_force(queue, list(changes), list(runs))
    return render(
        request,
        "dashboard/queue.html",
        {
            "title": path,
            "queue": queue,
            "in_force": in_force,
            "row": row,
            "state": queue_state(row),
            "state_label": STATES[queue_state(row)][0],
            "types": types,
            "measures": _measures(row, own_types),
            "usage_figure": usage_over_time_figure(points, own_types),
            "bars_figure": queue_bars_figure(row, own_types),
            "snapshot_points": len(points),
            "allocations": page,
            "allocation_count": page.paginator.count,
            "sort": sort,
            "desc": desc,
            "applications": apps[:APPLICATIONS_SHOWN],
            "application_rows": application_rows,
            "allocation_rows": allocation_rows,
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


def shared_reasons(
    items: Sequence[Mapping[str, object]], field: str = "reasons"
) -> tuple[list[str], list[dict[str, object]]]:
    """The reasons every one of *items* gives (when there are two or more), and the items
    with only their other reasons: a reason repeated in every row is said once.

    >>> shared_reasons([{"reasons": ["a", "b"]}, {"reasons": ["a", "c"]}])
    (['a'], [{'reasons': ['b']}, {'reasons': ['c']}])
    """
    lists = [[str(r) for r in cast(list[object], i.get(field) or [])] for i in items]
    if len(lists) < 2:
        return [], [dict(i) for i in items]
    common = set(lists[0]).intersection(*lists[1:])
    shared = [r for r in lists[0] if r in common]
    rows = [
        {**i, field: [r for r in rs if r not in common]} for i, rs in zip(items, lists, strict=True)
    ]
    return shared, rows


def _ancestors(path: str) -> list[tuple[str, str]]:
    parts = path.split(".")
    return [(".".join(parts[: i + 1]), parts[i]) for i in range(len(parts) - 1)]


def _measures(row: QueueRow, types: Sequence[str]) -> list[dict[str, str]]:
    """Per type, as text: guaranteed, allocated, preempting, remaining, max, preemptable.

    allocated is as YuniKorn reports it (preempting included) and remaining =
    allocated - preempting (the engine's usage); a type held only by allocations
    being preempted keeps its row, with 0 remaining.
    """
    out = []
    held, remaining = row.held, row.remaining
    for t in types:
        out.append(
            {
                "type": t,
                "guaranteed": display.format_quantity(t, (row.guaranteed or {}).get(t))
                if row.guaranteed is not None and t in row.guaranteed
                else "not defined",
                "allocated": display.format_quantity(t, held.get(t, 0)),
                "remaining": display.format_quantity(t, remaining.get(t, 0)),
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


#: Candidates listed per leaf (the rest are counted): a big leaf has thousands.
VICTIMS_PER_LEAF = 200


@login_required
@require_GET
def victims(request: HttpRequest) -> HttpResponse:
    """A queue's current victim candidates in the engine's order, with reasons and exclusions."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return no_snapshot(request, "Victims")
    path = request.GET.get("queue", "root")
    if not scope.snapshot.queues.filter(path=path).exists():
        raise Http404(f"Queue {path!r} is not in snapshot {scope.snapshot.pk}.")
    explanation = services.explain_victims(scope.snapshot, path, limit=VICTIMS_PER_LEAF)
    listed = [
        item
        for part in ("candidates", "exclusions")
        for item in cast(list[dict[str, object]], explanation.get(part) or [])
    ]
    candidates = cast(list[dict[str, object]], explanation.get("candidates") or [])
    shared, rows = shared_reasons(candidates)
    return render(
        request,
        "dashboard/victims.html",
        {
            "title": f"Victims in {path}",
            "path": path,
            "explanation": explanation,
            "names": services.allocation_names(scope.snapshot, (str(i["key"]) for i in listed)),
            # a reason every candidate has is said once, above the table
            "shared_reasons": shared,
            "candidates": rows,
            "ancestors": _ancestors(path),
        },
    )
