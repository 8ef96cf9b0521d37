"""The run history (table, timeline, CSV) and one run's detail."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, cast

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Prefetch
from django.http import (
    HttpRequest,
    HttpResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import (
    require_GET,
)

from dashboard import dataversion, display, models, services
from dashboard.access import scoping
from dashboard.access.grants import Access, access_for
from dashboard.access.redaction import run_redaction, tenant_redaction
from dashboard.charts.compact import compact_hover
from dashboard.charts.nodes import node_heatmap_figure
from dashboard.charts.queues import (
    levels_shown,
    on_crimson,
    outline_tree,
    queue_tree_figure,
    tree_levels,
)
from dashboard.charts.runs import history_timeline_figure, quota_plan_figure
from dashboard.display import NATURE_HELP
from dashboard.pages import data, forms
from dashboard.pages import scope as scope_mod
from dashboard.pages.memo import Memo
from dashboard.pages.tenant_tree import tenant_rows
from dashboard.pages.views.common import RUN_ACTIVE
from dashboard.pages.views.run_redaction import redact_run_page
from dashboard.services.quota.deadlines import armed
from dashboard.services.quota.restarts import scheduler_restarts


@login_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    """Every run as a Plotly timeline and a filtered table."""
    scope = scope_mod.resolve(request)
    user = request.user
    flt = forms.HistoryFilter(request.GET)
    params = {k: v for k, v in request.GET.items() if isinstance(v, str)}

    def live() -> SafeString:
        """The part read from the runs: timeline, table, agreement (nothing of the user's)."""
        runs = (
            scoping.filter_viewable_runs(data.filtered_runs(scope.partition, params), user)
            .annotate(victim_count=Count("victims"))
            .order_by("-queued_at", "-id")
        )
        # a predicted run shows its change's state (fired: awaiting the scheduler)
        page_runs = runs.prefetch_related(
            Prefetch(
                "changes",
                queryset=models.QuotaChange.objects.only("pk", "state", "run_id").order_by("pk"),
            )
        )
        page = Paginator(page_runs, 50).get_page(request.GET.get("page"))
        context = {
            "request": request,  # the pager's links keep the query
            "scope": scope,
            "runs": page,
            "run_total": page.paginator.count,
            "timeline": history_timeline_figure(data.run_rows(runs[:2000])),
            "live_active": runs.filter(status__in=RUN_ACTIVE).exists(),
            "agreement": services.agreement(
                runs.filter(trigger=models.PreemptionRun.Trigger.OBSERVED).select_related(
                    "predicted"
                )
            ),
        }
        return SafeString(render_to_string("dashboard/_history_live.html", context))

    # kept per process while no run, victim, partition or cluster changes, per scope and
    # query (filters, page); built afresh inside a transaction (dashboard.dataversion)
    key = (scope.query(), sorted(params.items()), scoping.read_scope_key(user))
    export = reverse("history_csv") + "?" + request.GET.urlencode()
    return render(
        request,
        "dashboard/history.html",
        {
            "title": "History",
            "filter": flt,
            "live": dataversion.cached(_HISTORY_MEMO, _HISTORY_TABLES, repr(key), live),
            "export_url": export,
            "filter_query": _without(request, "page"),
            "restarts": scheduler_restarts(scope.partition),
        },
    )


#: Every table the history's runs, timeline and agreement are read from.
_HISTORY_TABLES = (
    "dashboard_preemptionrun",
    "dashboard_runvictim",
    "dashboard_quotachange",
    "dashboard_partition",
    "dashboard_cluster",
)

#: The history's live part as HTML, per data versions, scope and query.
_HISTORY_MEMO: Memo[SafeString] = Memo(64)


def _without(request: HttpRequest, *keys: str) -> str:
    q = request.GET.copy()
    for key in keys:
        q.pop(key, None)
    return q.urlencode()


@login_required
@require_GET
def history_csv(request: HttpRequest) -> StreamingHttpResponse:
    """The filtered history as CSV (one row per run)."""
    scope = scope_mod.resolve(request)
    params = {k: v for k, v in request.GET.items() if isinstance(v, str)}
    runs = scoping.filter_viewable_runs(data.filtered_runs(scope.partition, params), request.user)
    runs = runs.order_by("queued_at", "id")
    response = StreamingHttpResponse(
        services.run_csv_lines(runs, redact=tenant_redaction(request.user)),
        content_type="text/csv; charset=utf-8",
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="preemption-runs-{stamp}.csv"'
    return response


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: request, answer, victims, claimed against target, alerts, timings."""
    run = get_object_or_404(
        models.PreemptionRun.objects.select_related(
            "partition__cluster", "snapshot", "created_by"
        ).defer("snapshot__scenario"),
        pk=pk,
    )
    scope_mod.pin(request, run.partition, run.snapshot)
    victims = list(run.victims.order_by("position"))
    places = places_of(victims)
    context: dict[str, object] = {
        "title": f"Run {run.pk}",
        "run": run,
        "victims": victims,
        "live_active": run.status in RUN_ACTIVE,
        "changes": run.changes.all(),
        "alert_rows": run.alert_rows.order_by("-created_at"),
        "elapsed": elapsed(run),
        "fire": fire_time(run),
        "ask_explain": services.explain_ask(run)
        if run.status == models.PreemptionRun.Status.DONE
        else None,
        "needed": services.explain_run_victims(run) if victims else {},
        "gang": victim_gang(run, places),
        "names": victim_names(run, places),
        "ask_pods": round_ask_pods(run),
        "nature_label": run.get_nature_display(),
        "nature_help": NATURE_HELP[run.nature],
        "comparison": services.compare(run) if run.predicted_id else None,
        "observed_by": list(run.observed_runs.order_by("queued_at", "id")),
    }
    context.update(run_figures(run, places, request.user))
    redaction = run_redaction(request.user, run)
    if redaction is not None:  # a tenant: victims of queues it cannot view without names
        redact_run_page(context, run, redaction)
    return render(request, "dashboard/run.html", context)


class VictimPlace(NamedTuple):
    """Where a run's victim is: what its figures and gang facts read of it."""

    allocation_key: str
    leaf: str
    queue: str
    node: str


def victim_places(run: models.PreemptionRun) -> list[VictimPlace]:
    """Every victim of *run*, in order, read as plain tuples (a plan can hold hundreds)."""
    rows = run.victims.order_by("position").values_list("allocation_key", "leaf", "queue", "node")
    return [VictimPlace(*row) for row in rows]


def places_of(victims: Sequence[models.RunVictim]) -> list[VictimPlace]:
    return [VictimPlace(v.allocation_key, v.leaf, v.queue, v.node) for v in victims]


def victim_gang(
    run: models.PreemptionRun, victims: Sequence[VictimPlace]
) -> dict[str, dict[str, object]]:
    """The gang placeholders (and replaced placeholders) among a run's victims, by key."""
    if not victims or run.snapshot is None:
        return {}
    facts = data.gang_facts(run.snapshot)
    return {v.allocation_key: facts[v.allocation_key] for v in victims if v.allocation_key in facts}


def victim_names(
    run: models.PreemptionRun, victims: Sequence[VictimPlace]
) -> dict[str, services.AllocationName]:
    """What a run's victims are called (pod, key, user), by key."""
    return services.allocation_names(run.snapshot, (v.allocation_key for v in victims))


def round_ask_pods(run: models.PreemptionRun) -> dict[str, str]:
    """The pods of a round's asks, by key (its victims table names the ask each is for)."""
    if run.kind != models.PreemptionRun.Kind.ROUND:
        return {}
    return services.ask_pods(run.snapshot_id, services.run_ask_keys(run))


def fire_time(run: models.PreemptionRun, now: datetime | None = None) -> dict[str, object] | None:
    """The quota preemption delay and fire time a run really had (or would have).

    An enforcement run shows the delay of the change that fired it and the time it
    fired (the change's deadline), never the engine's estimate from the snapshot's
    delay.  A what-if never shows a past time as a future one: its timer would
    start when the change is saved, so it says the delay and when it would fire
    if saved now.
    """
    result = run.result if isinstance(run.result, Mapping) else None
    if result is None or run.target is None or result.get("delay") is None:
        return None
    delay = float(result["delay"])
    if run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
        change = run.changes.order_by("-changed_at", "-id").first()
        if change is not None:
            fired = change.deadline or run.started_at or run.queued_at
            return {
                "delay": change.delay,
                "text": f"fired at {display.format_datetime(fired)}",
                "past": True,
            }
        fired_at = run.started_at or run.queued_at
        return {
            "delay": delay,
            "text": f"fired at {display.format_datetime(fired_at)}",
            "past": True,
        }
    if result.get("start_at") is None or delay <= 0:
        return {
            "delay": delay,
            "text": "never fires (a delay of 0 is never enforced)",
            "past": False,
        }
    # what saving this max now would do to the queue's timer, by the partition's rule
    # set: a timer from now, the first decrease's kept, or none (a max newly set, usage
    # within it)
    request = run.request if isinstance(run.request, Mapping) else {}
    new_max = request.get("new_max")
    decision = (
        services.preview_quota_change(
            run.partition,
            run.queue,
            new_max={str(t): int(q) for t, q in new_max.items()},
            snapshot=run.snapshot,
            now=now,
        )
        if run.partition is not None and run.queue and isinstance(new_max, Mapping)
        else None
    )
    if decision is not None:
        return {"delay": delay, "text": f"if saved now: {decision.reason}", "past": False}
    at = armed(now or timezone.now(), delay)
    return {
        "delay": delay,
        "text": f"fires {display.format_duration(delay)} after the change is saved "
        f"(at {display.format_datetime(at)} if saved now)",
        "past": False,
    }


def elapsed(run: models.PreemptionRun) -> float | None:
    start = run.started_at or run.queued_at
    end = run.finished_at or timezone.now()
    return max(0.0, (end - start).total_seconds())


#: Above this many nodes holding victims, the run's node figure outlines none of them.
HIGHLIGHTED_NODES_MAX = 60


def run_figures(
    run: models.PreemptionRun, victims: Sequence[VictimPlace], user: object = None
) -> dict[str, object]:
    """Figures for a finished run: the plan (quota) or the highlighted tree and nodes;
    for a *user* the queue ACLs restrict, the tree as :func:`tenant_rows` cuts it."""
    out: dict[str, object] = {}
    result = run.result if isinstance(run.result, dict) else None
    if result is None or run.snapshot is None:
        return out
    if run.kind in (
        models.PreemptionRun.Kind.WHATIF_QUOTA,
        models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
    ):
        out["plan_figure"] = quota_plan_figure(result)
        out["leaves"] = _leaves(result)
    victim_queues = {v.leaf or v.queue for v in victims}
    victim_nodes = {v.node for v in victims if v.node}
    fence = result.get("fence") if isinstance(result.get("fence"), str) else None
    if user is not None and scoping.is_tenant(user):
        tree = tenant_tree(run.snapshot, access_for(user, run.partition))
    else:
        tree = snapshot_tree(run.snapshot).figure
    if tree is not None:
        outlined = outline_tree(tree, fence=cast(str | None, fence), victim_queues=victim_queues)
        out["tree_figure"] = outlined
        out["tree_levels"] = tree_levels(tree)
        out["victims_on_crimson"] = on_crimson(outlined)
    if victim_nodes:
        nodes = data.node_rows_by_id(run.snapshot)
        node_rows = [nodes[i] for i in sorted(victim_nodes) if i in nodes]
        # every node shown holds victims; past a screenful of columns, an outline and a
        # label per column (one SVG shape and one measured annotation each) cost the
        # browser seconds and tell nothing more
        highlight = victim_nodes if len(victim_nodes) <= HIGHLIGHTED_NODES_MAX else set()
        out["nodes_figure"] = compact_hover(node_heatmap_figure(node_rows, highlight=highlight))
    return out


@dataclass(frozen=True, slots=True)
class SnapshotTree:
    """A snapshot's queue tree as a run's answer draws it, before the run's outlines."""

    figure: dict[str, object] | None  # None past TREE_QUEUES_MAX queues


#: Above this many queues, a run's answer draws no tree.
TREE_QUEUES_MAX = 3000
#: Trees of the snapshots runs were asked on lately (each the size of a tree figure).
_SNAPSHOT_TREES: Memo[SnapshotTree] = Memo(8)


def _tree_key(snapshot: models.ClusterSnapshot) -> tuple[str, data.ChangesKey]:
    """What a snapshot's tree figure is kept by: the snapshot and its waiting changes."""
    return (data.snapshot_key(snapshot), data.waiting_key(snapshot.partition))


def snapshot_tree(snapshot: models.ClusterSnapshot) -> SnapshotTree:
    """*snapshot*'s tree figure (hover text compact), once per process.

    Kept per snapshot and waiting changes (a lowered max shows in the hover text);
    each run outlines its own fence and victims' queues on it (``outline_tree``).
    """

    def build() -> SnapshotTree:
        rows = data.queue_rows(snapshot, with_preemptable=False)
        if len(rows) > TREE_QUEUES_MAX:
            return SnapshotTree(None)
        # as the tree page: past a few dozen queues, the deeper levels open on a click
        # (a victims' queue below them is found by the crimson trail outline_tree draws);
        # hover text sent as distinct pieces, joined back by the page's script
        figure = compact_hover(queue_tree_figure(rows, maxdepth=levels_shown(len(rows))))
        return SnapshotTree(figure)

    return _SNAPSHOT_TREES.get(_tree_key(snapshot), build)


def tenant_tree(snapshot: models.ClusterSnapshot, access: Access) -> dict[str, object] | None:
    """*snapshot*'s tree figure as a tenant sees it: its queues, the others as their share
    of the parent (built for each request: it depends on the user)."""
    rows = tenant_rows(data.queue_rows(snapshot, with_preemptable=False), access)
    if len(rows) > TREE_QUEUES_MAX:
        return None
    return compact_hover(queue_tree_figure(rows, maxdepth=levels_shown(len(rows))))


def answer_pieces_cached(snapshot: models.ClusterSnapshot) -> bool:
    """Whether this process keeps what a run's answer on *snapshot* reads the longest."""
    return _tree_key(snapshot) in _SNAPSHOT_TREES and data.nodes_cached(snapshot)


def warm_answer_pieces(snapshot: models.ClusterSnapshot) -> None:
    """Read what a run's answer on *snapshot* needs of it (tree, nodes, gang facts) now."""
    snapshot_tree(snapshot)
    data.node_rows_by_id(snapshot)
    data.gang_facts(snapshot)
    data.known_types(snapshot)


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
