"""One queue over a window of time: usage against guaranteed and max, preemptions by day and
node (the figures of ``/api/queue-over-time/``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.charts.overtime import (
    preemptions_per_day_figure,
    preemptions_per_node_figure,
    usage_steps_figure,
)
from dashboard.charts.values import UsagePoint, type_order
from dashboard.display import format_duration, in_units, unit_of
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.common import no_snapshot
from dashboard.services import ServiceError
from dashboard.services.history.overtime import MAX_WINDOW, TypeFigures
from dashboard.services.history.overtime_report import QueueOverTime, queue_over_time

#: Nodes listed in the per-node table (the most preempted first; the API answers all).
NODES_LISTED = 20
#: What ends the partition's data, in words (see ``data_extent``).
DATA_END_WORDS = {
    "snapshot": "the newest snapshot's capture",
    "run": "the newest predicted or observed run",
    "source": "the live source's last successful poll",
}


@login_required
@require_GET
def queue_over_time_page(request: HttpRequest) -> HttpResponse:
    """The queue's usage against its limits over ``?start=&end=`` and its preemptions."""
    scope = scope_mod.resolve(request)
    if scope.partition is None:
        return no_snapshot(request, "Queue over time")
    path = request.GET.get("queue", "root")
    start, end = request.GET.get("start", ""), request.GET.get("end", "")
    context: dict[str, object] = {
        "title": f"{path} over time",
        "path": path,
        "start": start,
        "end": end,
        "max_days": MAX_WINDOW.days,
    }
    try:
        report = queue_over_time(
            queue=path,
            partition=scope.partition.name,
            cluster=scope.partition.cluster.name,
            start=start,
            end=end,
        )
    except ServiceError as exc:
        context["error"] = {"field": exc.field, "message": exc.message}
        return render(request, "dashboard/overtime.html", context, status=400)
    context.update(_figures(report))
    return render(request, "dashboard/overtime.html", context)


def _mean(rtype: str, quantity: float) -> str:
    """A mean quantity in the type's display unit, to a tenth (a mean is not exact)."""
    unit = unit_of(rtype)[0]
    return f"{in_units(rtype, round(quantity)):,.1f} {unit}".strip()


def _type_row(f: TypeFigures, is_instant: bool) -> dict[str, str]:
    share = f.guaranteed_share
    if is_instant:  # one snapshot at one instant: its figures, no time
        return {
            "type": f.type,
            "mean_used": _mean(f.type, f.mean_used),
            "guaranteed_share": "no guaranteed" if share is None else f"{100 * share:.1f} %",
            "guaranteed_time": "—",
            "above_max": "—",
            "max_time": "—",
        }
    return {
        "type": f.type,
        "mean_used": _mean(f.type, f.mean_used),
        "guaranteed_share": "no guaranteed" if share is None else f"{100 * share:.1f} %",
        "guaranteed_time": format_duration(f.guaranteed_seconds),
        "above_max": format_duration(f.above_max_seconds) if f.max_seconds else "no max",
        "max_time": format_duration(f.max_seconds),
    }


def _figures(report: QueueOverTime) -> dict[str, object]:
    usage = report.usage
    types = sorted((f.type for f in usage.types), key=type_order)
    points = [
        UsagePoint(
            at=p.at,
            used=dict(p.used),
            guaranteed=None if p.guaranteed is None else dict(p.guaranteed),
            max=None if p.max is None else dict(p.max),
            allocated=dict(p.allocated),
        )
        for p in usage.series
    ]
    by_type = {f.type: f for f in usage.types}
    days = [(d.day, d.predicted.victims, d.observed.victims) for d in report.days]
    nodes = [(n.node, n.predicted, n.observed) for n in report.nodes]
    return {
        "report": report,
        "window": usage.window,
        "covered": format_duration(usage.covered_seconds),
        "above_max_any": format_duration(usage.above_max_any_seconds),
        "resampled": format_duration(usage.resampled_seconds) if usage.resampled_seconds else "",
        "type_rows": [_type_row(by_type[t], usage.is_instant) for t in types],
        # the last step ends where the data does, not at the window's end
        "usage_figure": usage_steps_figure(
            report.queue, points, types[:4], usage.until, (usage.window.start, usage.window.end)
        ),
        "data_end_by": DATA_END_WORDS.get(report.data.end_by, "") if report.data else "",
        "day_figure": preemptions_per_day_figure(report.queue, days),
        "node_figure": preemptions_per_node_figure(report.queue, nodes),
        "day_totals": {
            "predicted_runs": sum(d.predicted.runs for d in report.days),
            "predicted": sum(d.predicted.victims for d in report.days),
            "observed_runs": sum(d.observed.runs for d in report.days),
            "observed": sum(d.observed.victims for d in report.days),
        },
        "nodes": report.nodes[:NODES_LISTED],
        "node_count": len(report.nodes),
        "node_window": report.node_window,
    }
