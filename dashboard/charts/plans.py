"""Plotly figures of a config rollout plan: the tree by outcome and the timeline of firings.

Plain functions from a :class:`dashboard.planning.ConfigPlan` to figure dicts,
no ORM.  The tree reuses :func:`dashboard.queue_tree_figure` (same
icicle, same hover) and recolours it by what happens to each queue; colour is
never the only cue: every box says it in words too, and the page lists the
same outcomes in a legend and a table.  Queue names go through
:func:`dashboard.charts.style.plot_text` before any label or hover text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dashboard import display
from dashboard.charts.queues import queue_tree_figure
from dashboard.charts.style import OUTCOME_COLOURS, plot_text
from dashboard.charts.values import QueueRow
from dashboard.planning import ConfigPlan, PlannedChange

FigureDict = dict[str, object]


@dataclass(frozen=True, slots=True)
class Outcome:
    key: str
    label: str
    colour: str


#: What can happen to a queue, most pressing first (legend order).
OUTCOMES: dict[str, Outcome] = {
    o.key: o
    for o in (
        Outcome("preempts", "fires and preempts", "#c2255c"),
        Outcome("loses", "loses allocations to a firing above it", "#e8590c"),
        Outcome("fires_nothing", "fires, nothing left to take", "#7950f2"),
        Outcome("no_timer", "max lowered, no timer starts", "#d9a21b"),
        Outcome("changed", "changed, no quota preemption needed", "#1c7ed6"),
        Outcome("added", "added", "#2f9e6e"),
        Outcome("removed", "removed", "#495057"),
        Outcome("unchanged", "unchanged", "#adb5bd"),
    )
}


def _outcome_of(change: PlannedChange) -> tuple[str, str]:
    if change.kind == "added":
        return "added", "added"
    if change.kind == "removed":
        return "removed", "removed"
    if change.order is not None and change.victims:
        n = len(change.victims)
        return "preempts", f"fires #{change.order}, preempts {n} allocation{'s' * (n != 1)}"
    if change.order is not None:
        return "fires_nothing", f"fires #{change.order}, nothing to take"
    if change.is_decrease:
        return "no_timer", "max lowered, no timer"
    return "changed", "changed"


def queue_outcomes(plan: ConfigPlan) -> dict[str, tuple[str, str]]:
    """Queue path -> (outcome key, short text) for every queue the plan touches."""
    out: dict[str, tuple[str, str]] = {}
    for change in (*plan.changes, *plan.pending):
        out[change.queue] = _outcome_of(change)
    lost: dict[str, int] = {}
    for change in plan.firings:
        for v in change.victims:
            if v.queue != change.queue:
                lost[v.queue] = lost.get(v.queue, 0) + 1
    for leaf, n in lost.items():
        if leaf not in out:
            out[leaf] = ("loses", f"loses {n} allocation{'s' * (n != 1)}")
    return out


def plan_rows(plan: ConfigPlan) -> list[QueueRow]:
    """One row per queue of the applied config (and of the snapshot), removed ones included."""
    rows: dict[str, QueueRow] = {}
    spec = plan.parsed.partition(plan.partition) if plan.parsed is not None else None
    if spec is not None:
        for q in spec.queues():
            rows[q.path] = QueueRow(q.path, q.guaranteed, q.max, dict(plan.usage.get(q.path, {})))
    for path, used in plan.usage.items():
        if path not in rows:
            rows[path] = QueueRow(path, used=dict(used))
    for change in plan.changes:
        if change.kind == "removed" and change.queue not in rows:
            rows[change.queue] = QueueRow(
                change.queue, change.old_guaranteed, change.old_max, dict(change.usage or {})
            )
    present = set(rows)
    # an icicle needs every parent: removed subtrees hang under the nearest present ancestor
    ordered = sorted(rows.values(), key=lambda r: r.path)
    return [r for r in ordered if r.path == "root" or r.parent in present]


def plan_tree_figure(plan: ConfigPlan) -> FigureDict:
    """The queue tree coloured and labelled by what applying the config does to each queue."""
    rows = plan_rows(plan)
    outcomes = queue_outcomes(plan)
    fig = queue_tree_figure(rows, maxdepth=-1)
    data = fig["data"]
    assert isinstance(data, list)
    trace = data[0]
    assert isinstance(trace, dict)
    colours: list[str] = []
    labels: list[str] = []
    hover: list[str] = []
    old_hover = trace.get("hovertext")
    assert isinstance(old_hover, list)
    for row, base in zip(rows, old_hover, strict=True):
        key, text = outcomes.get(row.path, ("unchanged", "unchanged"))
        outcome = OUTCOMES[key]
        colours.append(outcome.colour)
        safe = plot_text(text)
        labels.append(f"{plot_text(row.name)}<br><i>{safe}</i>")
        hover.append(f"<b>{plot_text(row.path)}</b><br>{safe}<br>{base}")
    marker = trace.get("marker")
    assert isinstance(marker, dict)
    marker["colors"] = colours
    trace["labels"] = labels
    trace["hovertext"] = hover
    return fig


def plan_timeline_figure(plan: ConfigPlan) -> FigureDict:
    """The firings over time: one marker per firing, labelled with its order and outcome."""
    firings = plan.firings
    by_status: dict[str, list[PlannedChange]] = {}
    for change in firings:
        by_status.setdefault(change.status, []).append(change)
    data: list[dict[str, object]] = []
    for status, group in sorted(by_status.items()):
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "x": [_x(c.fires_at or 0.0) for c in group],
                "y": [plot_text(c.queue) for c in group],
                "text": [f"#{c.order}" for c in group],
                "textposition": "middle right",
                "name": plot_text(status.replace("_", " ")),
                "marker": {
                    "size": [min(32, 12 + 2 * len(c.victims)) for c in group],
                    "color": OUTCOME_COLOURS.get(status, "#868e96"),
                    "symbol": "circle" if status != "not_needed" else "circle-open",
                    "line": {"width": 1, "color": "rgba(255,255,255,0.9)"},
                },
                "hovertext": [_firing_hover(c) for c in group],
                "hoverinfo": "text",
            }
        )
    queues = sorted({c.queue for c in firings}, key=lambda q: (-q.count("."), q))
    layout: dict[str, object] = {
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "height": max(240, 120 + 30 * len(queues)),
        "margin": {"t": 30, "l": 180, "r": 40, "b": 80},
        "xaxis": {"type": "date", "title": {"text": ""}},
        "yaxis": {
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [plot_text(q) for q in queues],
            "title": {"text": ""},
        },
        "legend": {"orientation": "h", "y": -0.2},
        "shapes": [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": _x(plan.now),
                "x1": _x(plan.now),
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "width": 1, "color": "#868e96"},
            }
        ],
        "annotations": [
            {
                "xref": "x",
                "yref": "paper",
                "x": _x(plan.now),
                "y": 1,
                "text": "applied",
                "showarrow": False,
                "yanchor": "bottom",
            }
        ],
    }
    return {"data": data, "layout": layout}


def _x(epoch: float) -> str:
    # a date axis value in UTC (Plotly reads it as given, without a zone)
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _firing_hover(change: PlannedChange) -> str:
    totals = change.totals
    lines = [
        f"<b>#{change.order} {plot_text(change.queue)}</b>",
        f"fires at {display.format_instant(change.fires_at or 0.0)} UTC",
        f"status: {plot_text(change.status.replace('_', ' '))}",
        f"victims: {totals.allocations} allocations in {totals.applications} applications",
    ]
    if totals.resources:
        lines.append(f"preempted: {plot_text(display.format_resource(totals.resources))}")
    if change.preemptable:
        lines.append(f"target: {plot_text(display.format_resource(change.preemptable))}")
    return "<br>".join(lines)
