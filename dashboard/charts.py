"""Plotly figures for the pages: engine answers and snapshot data -> figure dicts.

This module owns how the dashboard *draws* queues, nodes, runs and plans.  It
takes plain values (the dataclasses below, engine answers as dicts) and returns
Plotly figure dicts (``{"data": [...], "layout": {...}}``) ready for
``json_script``; it never touches the ORM.  The dicts follow Plotly's schema
(checked by the tests with ``plotly.graph_objects``) without paying for that
validation on every request.

Two rules hold everywhere:

* "Not defined" is not 0.  An undefined max is unlimited and an undefined
  guaranteed is fully preemptable; hover text says "not defined" and bars draw
  a hatched ghost instead of a zero-length bar.
* Every piece of user text (queue paths, node ids, application names) goes
  through :func:`plot_text` before it reaches a label, tick or hover text,
  because Plotly renders a subset of HTML there.
"""

from __future__ import annotations

import copy
import html
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, cast

from dashboard.display import format_quantity, in_units, unit_of

Resource = Mapping[str, int]
FigureDict = dict[str, object]
QueueState = Literal["within", "above", "at_max", "over_max"]

#: Display order of states, least to most pressing, with label and colour.
STATES: dict[QueueState, tuple[str, str]] = {
    "within": ("within guaranteed", "#2f9e6e"),
    "above": ("above guaranteed", "#d9a21b"),
    "at_max": ("at max", "#e8590c"),
    "over_max": ("over a lowered max", "#c2255c"),
}
MEASURE_COLOURS = {
    "guaranteed": "#2f9e6e",
    "used": "#3b6fd8",
    "max": "#6c757d",
    "preemptable": "#d9a21b",
}
FENCE_COLOUR = "#1c7ed6"
VICTIM_COLOUR = "#c2255c"
OUTCOME_COLOURS = {
    "preempted": "#3b6fd8",
    "enforced": "#2f9e6e",
    "fits": "#74b816",
    "not_needed": "#868e96",
    "best_effort": "#d9a21b",
    "does_not_help": "#c2255c",
    "not_possible": "#e8590c",
    "failed": "#495057",
    "skipped": "#adb5bd",
}
_BASE_LAYOUT: dict[str, object] = {
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 13},
    "hoverlabel": {"align": "left", "font": {"size": 12}},
}


# --------------------------------------------------------------------------- input values


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One queue as the pages draw it.

    ``used`` is the engine's usage (allocated minus preempting).  ``lowered_max``
    is a pending scheduled max that is lower than the current one, if any.
    """

    path: str
    guaranteed: Resource | None = None
    max: Resource | None = None
    used: Resource = field(default_factory=dict)
    preemptable: Resource | None = None
    preempting: Resource = field(default_factory=dict)
    lowered_max: Resource | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""


@dataclass(frozen=True, slots=True)
class NodeRow:
    """A node: capacity and the sum of allocations on it (preempted ones included)."""

    id: str
    capacity: Resource
    allocated: Resource = field(default_factory=dict)
    schedulable: bool = True


@dataclass(frozen=True, slots=True)
class RunRow:
    """One preemption run for the history timeline."""

    id: int
    started: datetime
    queue: str
    trigger: str
    outcome: str
    victims: int = 0
    finished: datetime | None = None


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """A queue's limits and usage as stored in one snapshot."""

    at: datetime
    used: Resource
    guaranteed: Resource | None = None
    max: Resource | None = None


# --------------------------------------------------------------------------- text and units


def plot_text(text: str) -> str:
    """*text* made safe for a Plotly label, tick or hover text.

    Plotly turns ``<b>``, ``<br>``, ``<a href>`` ... into SVG and decodes
    ``&lt;`` / ``&gt;`` / ``&amp;`` back into characters (but not ``&quot;``),
    so escaping ``& < >`` shows any name as the text it is.

    >>> plot_text("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return html.escape(text, quote=False)


def resource_types(rows: Iterable[QueueRow]) -> list[str]:
    """Every resource type named by any queue, vcore and memory first."""
    seen: set[str] = set()
    for row in rows:
        for res in (row.guaranteed, row.max, row.used, row.preemptable, row.lowered_max):
            if res:
                seen.update(res)
    return sorted(seen, key=_type_order)


def _type_order(rtype: str) -> tuple[int, str]:
    return ({"vcore": 0, "memory": 1}.get(rtype, 2), rtype)


# --------------------------------------------------------------------------- queue state


def queue_state(row: QueueRow, rtype: str | None = None) -> QueueState:
    """How full a queue is, in one type or (``None``) the worst over all types.

    * ``over_max``: usage above the max, or above a pending lowered max;
    * ``at_max``: some used type has reached its max;
    * ``above``: some used type exceeds its guaranteed amount (an undefined
      guaranteed type counts as 0: undefined guaranteed types are fully preemptable);
    * ``within``: none of those.

    >>> queue_state(QueueRow("root.a", guaranteed={"vcore": 5}, used={"vcore": 5}))
    'within'
    >>> queue_state(QueueRow("root.a", max={"vcore": 5}, used={"vcore": 5}))
    'at_max'
    >>> queue_state(QueueRow("root.a", max={"vcore": 9}, used={"vcore": 5},
    ...                      lowered_max={"vcore": 4}))
    'over_max'
    """
    types = [rtype] if rtype is not None else list(row.used)
    worst: QueueState = "within"
    order = list(STATES)
    for t in types:
        used = row.used.get(t, 0)
        if used <= 0:
            continue
        state: QueueState = "within"
        if (row.max is not None and t in row.max and used > row.max[t]) or (
            row.lowered_max is not None and t in row.lowered_max and used > row.lowered_max[t]
        ):
            state = "over_max"
        elif row.max is not None and t in row.max and used >= row.max[t]:
            state = "at_max"
        elif row.guaranteed is None or used > row.guaranteed.get(t, 0):
            state = "above"
        if order.index(state) > order.index(worst):
            worst = state
    return worst


def _get(res: Resource | None, rtype: str) -> int | None:
    if res is None:
        return None
    return res.get(rtype)


def queue_hover(row: QueueRow, types: Sequence[str], selected: str | None = None) -> str:
    """Hover text for a queue: state, then each type's used/guaranteed/max/preemptable."""
    label, _ = STATES[queue_state(row, selected)]
    lines = [f"<b>{plot_text(row.path)}</b>", f"state: {label}"]
    shown = ([selected] if selected else []) + [t for t in types if t != selected]
    for t in shown:
        parts = [
            f"used {format_quantity(t, row.used.get(t, 0))}",
            f"guaranteed {format_quantity(t, _get(row.guaranteed, t))}",
            f"max {_max_text(t, row.max)}",
            f"preemptable {format_quantity(t, _get(row.preemptable, t))}",
        ]
        if row.lowered_max is not None and t in row.lowered_max:
            parts.append(f"scheduled max {format_quantity(t, row.lowered_max[t])}")
        lines.append(f"{plot_text(t)}: " + " · ".join(parts))
    return "<br>".join(lines)


def _max_text(rtype: str, res: Resource | None) -> str:
    value = _get(res, rtype)
    return "not defined (unlimited)" if value is None else format_quantity(rtype, value)


# --------------------------------------------------------------------------- figures
#
# Figures are built as plain dicts in Plotly's figure format.  Building them
# through plotly.graph_objects validates every property and every element of
# every array on each request, which cost more than the rest of a page (tree,
# queue and node pages under load); tests/dashboard/test_charts.py validates
# each figure against Plotly's schema with ``go.Figure(figure)`` instead.


def _layout(**extra: object) -> dict[str, object]:
    layout = copy.deepcopy(_BASE_LAYOUT)
    layout.update(extra)
    return layout


def _axis_name(kind: str, index: int) -> str:
    """``xaxis`` / ``xaxis2`` (layout keys) for subplot *index* (1-based)."""
    return f"{kind}axis" if index == 1 else f"{kind}axis{index}"


def _axis_ref(kind: str, index: int) -> str:
    """``x`` / ``x2`` (trace references) for subplot *index* (1-based)."""
    return kind if index == 1 else f"{kind}{index}"


def _stacked(
    layout: dict[str, object], titles: Sequence[str], spacing: float, *, shared_x: bool = False
) -> None:
    """Stack len(titles) subplots vertically (first on top), each titled, into *layout*."""
    n = len(titles)
    height = (1.0 - spacing * (n - 1)) / n
    annotations: list[dict[str, object]] = []
    for i, title in enumerate(titles, start=1):
        top = 1.0 - (i - 1) * (height + spacing)
        bottom = max(0.0, top - height)
        xaxis: dict[str, object] = {"anchor": _axis_ref("y", i), "domain": [0.0, 1.0]}
        if shared_x and i > 1:
            xaxis["matches"] = "x"
        if shared_x and i < n:
            xaxis["showticklabels"] = False
        layout[_axis_name("x", i)] = xaxis
        layout[_axis_name("y", i)] = {"anchor": _axis_ref("x", i), "domain": [bottom, top]}
        annotations.append(_subplot_title(title, 0.5, top))
    layout["annotations"] = annotations


def _side_by_side(layout: dict[str, object], titles: Sequence[str], spacing: float) -> None:
    """Place len(titles) subplots side by side (first on the left), each titled."""
    n = len(titles)
    width = (1.0 - spacing * (n - 1)) / n
    annotations: list[dict[str, object]] = []
    for i, title in enumerate(titles, start=1):
        left = (i - 1) * (width + spacing)
        right = min(1.0, left + width)
        layout[_axis_name("x", i)] = {"anchor": _axis_ref("y", i), "domain": [left, right]}
        layout[_axis_name("y", i)] = {"anchor": _axis_ref("x", i), "domain": [0.0, 1.0]}
        annotations.append(_subplot_title(title, (left + right) / 2, 1.0))
    layout["annotations"] = annotations


def _subplot_title(text: str, x: float, y: float) -> dict[str, object]:
    return {
        "text": text,
        "x": x,
        "xref": "paper",
        "xanchor": "center",
        "y": y,
        "yref": "paper",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 14},
    }


def _on(trace: dict[str, object], index: int) -> dict[str, object]:
    """*trace* drawn on subplot *index* (1-based)."""
    trace["xaxis"] = _axis_ref("x", index)
    trace["yaxis"] = _axis_ref("y", index)
    return trace


def _update(layout: dict[str, object], key: str, **values: object) -> None:
    axis = layout.setdefault(key, {})
    assert isinstance(axis, dict)
    axis.update(values)


def queue_tree_figure(
    rows: Sequence[QueueRow],
    rtype: str | None = None,
    *,
    fence: str | None = None,
    victim_queues: Collection[str] = (),
    maxdepth: int = -1,
    level: str | None = None,
) -> FigureDict:
    """The queue hierarchy as an icicle, one box per queue, coloured by state.

    Args:
        rows: every queue; parents are derived from the paths.
        rtype: colour by this resource type only (``None``: worst over all).
        fence: the what-if fence root, outlined in blue with its subtree.
        victim_queues: queues holding victims, outlined in crimson.
        maxdepth: levels shown at once (``-1``: all); deeper levels open on click.
        level: the queue path to start zoomed into (a leaf shows within its parent).
    """
    types = resource_types(rows)
    ids = [row.path for row in rows]
    present = set(ids)
    victims = set(victim_queues)
    colours: list[str] = []
    widths: list[float] = []
    lines: list[str] = []
    hover: list[str] = []
    for row in rows:
        colours.append(STATES[queue_state(row, rtype)][1])
        hover.append(queue_hover(row, types, rtype))
        if row.path in victims:
            lines.append(VICTIM_COLOUR)
            widths.append(4)
        elif fence is not None and (row.path == fence or row.path.startswith(fence + ".")):
            lines.append(FENCE_COLOUR)
            widths.append(4 if row.path == fence else 2)
        else:
            lines.append("rgba(255,255,255,0.8)")
            widths.append(1)
    trace: dict[str, object] = {
        "type": "icicle",
        "ids": ids,
        "labels": [plot_text(row.name) for row in rows],
        "parents": [row.parent if row.parent in present else "" for row in rows],
        "hovertext": hover,
        "hoverinfo": "text",
        "textinfo": "label",
        "marker": {"colors": colours, "line": {"color": lines, "width": widths}},
        "maxdepth": maxdepth,
        "tiling": {"orientation": "v"},
        "root": {"color": "rgba(0,0,0,0)"},
        "leaf": {"opacity": 1.0},
        # plotly.js 4.1 draws NaN paths in the path bar when the level changes; the page
        # shows its own breadcrumb instead
        "pathbar": {"visible": False},
        "sort": False,
    }
    if level is not None and level in present:
        # zooming into a leaf draws nothing (plotly.js computes NaN paths): show its parent
        parents = {row.parent for row in rows}
        trace["level"] = level if level in parents else (level.rsplit(".", 1)[0] or level)
    layout = _layout(margin={"t": 30, "l": 4, "r": 4, "b": 4}, uirevision="tree")
    return {"data": [trace], "layout": layout}


def queue_bars_figure(row: QueueRow, types: Sequence[str] | None = None) -> FigureDict:
    """Guaranteed, used, max and preemptable of one queue, one panel per resource type.

    A defined value is a solid bar labelled with its value (0 gives an empty
    bar labelled "0"); an undefined one is a hatched ghost across the panel
    labelled "not defined", so the two never look alike.
    """
    shown = list(types) if types is not None else resource_types([row])
    if not shown:
        shown = ["vcore", "memory"]
    height = 70 + 185 * len(shown)
    layout = _layout(
        barmode="overlay",
        height=height,
        margin={"t": 40, "l": 90, "r": 20, "b": 20},
        title={"text": plot_text(row.path), "x": 0, "font": {"size": 14}},
        showlegend=False,
    )
    _stacked(
        layout,
        [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        min(0.3, 80 / height),
    )
    measures: list[tuple[str, Resource | None]] = [
        ("guaranteed", row.guaranteed),
        ("used", row.used),
        ("max", row.max),
        ("preemptable", row.preemptable),
    ]
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        defined: list[tuple[str, int]] = []
        undefined: list[str] = []
        for name, res in measures:
            value = _get(res, t) if name != "used" else row.used.get(t, 0)
            if value is None:
                undefined.append(name)
            else:
                defined.append((name, value))
        extent = max([in_units(t, v) for _, v in defined] + [0.0]) * 1.15 or 1.0
        data.append(
            _on(
                {
                    "type": "bar",
                    "orientation": "h",
                    "y": [name for name, _ in defined],
                    "x": [in_units(t, v) for _, v in defined],
                    "text": [format_quantity(t, v) for _, v in defined],
                    "textposition": "outside",
                    "cliponaxis": False,
                    "marker": {"color": [MEASURE_COLOURS[name] for name, _ in defined]},
                    "hovertext": [
                        f"{name}: {format_quantity(t, v)} ({plot_text(t)})" for name, v in defined
                    ],
                    "hoverinfo": "text",
                    "name": plot_text(f"{t} defined"),
                    "showlegend": False,
                },
                index,
            )
        )
        data.append(
            _on(
                {
                    "type": "bar",
                    "orientation": "h",
                    "y": undefined,
                    "x": [extent] * len(undefined),
                    "text": ["not defined"] * len(undefined),
                    "textposition": "inside",
                    "insidetextanchor": "middle",
                    "textfont": {"color": "#868e96"},  # readable on light and dark pages
                    "marker": {
                        "color": "rgba(134,142,150,0.08)",
                        "line": {"color": "rgba(134,142,150,0.7)", "width": 1},
                        "pattern": {"shape": "/", "fgcolor": "rgba(134,142,150,0.55)", "size": 8},
                    },
                    "hovertext": [
                        f"{name}: not defined"
                        + (" (unlimited)" if name == "max" else "")
                        + (" (fully preemptable)" if name == "guaranteed" else "")
                        for name in undefined
                    ],
                    "hoverinfo": "text",
                    "name": plot_text(f"{t} not defined"),
                    "showlegend": False,
                },
                index,
            )
        )
        _update(
            layout,
            _axis_name("y", index),
            categoryorder="array",
            categoryarray=["preemptable", "max", "used", "guaranteed"],
        )
        _update(layout, _axis_name("x", index), range=[0, extent * 1.25], rangemode="tozero")
    return {"data": data, "layout": layout}


def node_heatmap_figure(
    nodes: Sequence[NodeRow],
    types: Sequence[str] | None = None,
    *,
    highlight: Collection[str] = (),
) -> FigureDict:
    """Utilisation (allocated / capacity, %) per node and resource type.

    Nodes run along x (sorted by id), types along y.  A node without capacity
    in a type has no cell.  Nodes in *highlight* (for example those holding
    what-if victims) are outlined in crimson and labelled above their column.
    """
    ordered = sorted(nodes, key=lambda n: n.id)
    if types is None:
        seen: set[str] = set()
        for n in ordered:
            seen.update(n.capacity)
        types = sorted(seen, key=_type_order)
    labels = [plot_text(n.id) for n in ordered]
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for t in types:
        z_row: list[float | None] = []
        t_row: list[str] = []
        for n, label in zip(ordered, labels, strict=True):
            cap = n.capacity.get(t)
            used = n.allocated.get(t, 0)
            head = f"<b>{label}</b>{'' if n.schedulable else ' (unschedulable)'}"
            if not cap:
                z_row.append(None)
                t_row.append(f"{head}<br>{plot_text(t)}: no capacity")
            else:
                z_row.append(round(100 * used / cap, 1))
                t_row.append(
                    f"{head}<br>{plot_text(t)}: {format_quantity(t, used)} of "
                    f"{format_quantity(t, cap)} ({100 * used / cap:.1f}%)"
                )
        z.append(z_row)
        text.append(t_row)
    heat: dict[str, object] = {
        "type": "heatmap",
        "x": labels,
        "y": [plot_text(t) for t in types],
        "z": z,
        "hovertext": text,
        "hoverinfo": "text",
        "zmin": 0,
        "zmax": 100,
        "colorscale": [[0, "#e7f5ff"], [0.6, "#4dabf7"], [0.85, "#f08c00"], [1, "#c2255c"]],
        "colorbar": {"title": {"text": "%"}, "thickness": 12},
        "xgap": 1 if len(ordered) < 200 else 0,
        "ygap": 2,
    }
    shapes: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    wanted = set(highlight)
    for index, n in enumerate(ordered):
        if n.id not in wanted:
            continue
        # an outline around the node's column: victims are on this node
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": index - 0.5,
                "x1": index + 0.5,
                "y0": 0,
                "y1": 1,
                "line": {"color": VICTIM_COLOUR, "width": 3},
                "fillcolor": "rgba(0,0,0,0)",
            }
        )
        annotations.append(
            {
                "x": index,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "text": "▼ victims",
                "showarrow": False,
                "font": {"color": VICTIM_COLOUR, "size": 11},
            }
        )
    layout = _layout(
        height=140 + 46 * max(1, len(types)),
        margin={"t": 30, "l": 110, "r": 20, "b": 80},
        xaxis={"type": "category", "showticklabels": len(ordered) <= 60, "title": "nodes"},
        yaxis={"type": "category", "autorange": "reversed"},
        showlegend=False,
        shapes=shapes,
        annotations=annotations,
    )
    return {"data": [heat], "layout": layout}


def history_timeline_figure(runs: Sequence[RunRow]) -> FigureDict:
    """Preemption runs over time: one marker per run, row per queue, colour per outcome.

    Marker size grows with the number of victims; ``customdata`` carries the
    run id so the page can open the run on click.
    """
    data: list[dict[str, object]] = []
    by_outcome: dict[str, list[RunRow]] = {}
    for run in sorted(runs, key=lambda r: (r.started, r.id)):
        by_outcome.setdefault(run.outcome, []).append(run)
    for outcome, group in sorted(by_outcome.items()):
        data.append(
            {
                "type": "scatter",
                "x": [r.started.isoformat() for r in group],
                "y": [plot_text(r.queue) for r in group],
                "mode": "markers",
                "name": plot_text(outcome.replace("_", " ")),
                "marker": {
                    "size": [min(30, 10 + 2 * r.victims) for r in group],
                    "color": OUTCOME_COLOURS.get(outcome, "#868e96"),
                    "line": {"width": 1, "color": "rgba(255,255,255,0.9)"},
                },
                "customdata": [r.id for r in group],
                "hovertext": [_run_hover(r) for r in group],
                "hoverinfo": "text",
            }
        )
    xaxis: dict[str, object] = {"type": "date", "title": {"text": ""}}
    span = _padded_range([r.started for r in runs], timedelta(minutes=10))
    if span is not None:
        xaxis["range"] = span
    layout = _layout(
        height=max(260, 120 + 28 * len({r.queue for r in runs})),
        margin={"t": 20, "l": 160, "r": 20, "b": 40},
        xaxis=xaxis,
        yaxis={"type": "category", "title": {"text": ""}},
        legend={"orientation": "h", "y": 1.08},
    )
    return {"data": data, "layout": layout}


def _padded_range(times: Sequence[datetime], minimum: timedelta) -> list[str] | None:
    """An x range at least *minimum* wide around *times* (``None``: let Plotly choose)."""
    if not times:
        return None
    low, high = min(times), max(times)
    if high - low >= minimum:
        return None
    pad = (minimum - (high - low)) / 2
    return [(low - pad).isoformat(), (high + pad).isoformat()]


def _run_hover(run: RunRow) -> str:
    lines = [
        f"<b>run {run.id}</b> · {plot_text(run.outcome.replace('_', ' '))}",
        f"queue {plot_text(run.queue)}",
        f"trigger {plot_text(run.trigger)}",
        f"started {run.started:%Y-%m-%d %H:%M:%S %Z}".rstrip(),
        f"victims {run.victims}",
    ]
    if run.finished is not None:
        lines.append(f"took {(run.finished - run.started).total_seconds():.2f} s")
    return "<br>".join(lines)


def usage_over_time_figure(points: Sequence[UsagePoint], types: Sequence[str]) -> FigureDict:
    """A queue's used, guaranteed and max per type across stored snapshots.

    Undefined limits leave gaps (``None``), never a line at 0.
    """
    ordered = sorted(points, key=lambda p: p.at)
    shown = list(types) or ["vcore"]
    layout = _layout(
        height=max(260, 200 * len(shown)),
        margin={"t": 40, "l": 60, "r": 20, "b": 30},
        legend={"orientation": "h", "y": 1.1},
        hovermode="x unified",
    )
    _stacked(
        layout,
        [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        min(0.12, 0.5 / len(shown)),
        shared_x=True,
    )
    xs = [p.at.isoformat() for p in ordered]
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        series: list[tuple[str, list[int | None], dict[str, object]]] = [
            ("used", [p.used.get(t, 0) for p in ordered], {"width": 2.5}),
            ("guaranteed", [_get(p.guaranteed, t) for p in ordered], {"dash": "dash"}),
            ("max", [_get(p.max, t) for p in ordered], {"dash": "dot", "shape": "hv"}),
        ]
        for name, values, line in series:
            data.append(
                _on(
                    {
                        "type": "scatter",
                        "x": xs,
                        "y": [None if v is None else in_units(t, v) for v in values],
                        "mode": "lines+markers",
                        "name": name,
                        "legendgroup": name,
                        "showlegend": index == 1,
                        "line": {"color": MEASURE_COLOURS[name], **line},
                        "connectgaps": False,
                        "hovertext": [f"{name} {format_quantity(t, v)}" for v in values],
                        "hoverinfo": "text+x",
                    },
                    index,
                )
            )
        _update(layout, _axis_name("y", index), rangemode="tozero")
    span = _padded_range([p.at for p in ordered], timedelta(hours=1))
    if span is not None:
        for index in range(1, len(shown) + 1):
            _update(layout, _axis_name("x", index), range=span)
    return {"data": data, "layout": layout}


def quota_plan_figure(answer: Mapping[str, object]) -> FigureDict:
    """A quota-decrease plan: per leaf and type, its share of the target against claimed.

    *answer* is the engine's ``quota_change`` answer as a dict (``to_dict()``).
    When more than the queue itself took part, the last row compares the whole
    target with the total claimed.
    """
    target = cast(Mapping[str, int], answer.get("preemptable") or {})
    claimed = cast(Mapping[str, int], answer.get("claimed") or {})
    leaves = cast(Mapping[str, Mapping[str, object]], answer.get("leaves") or {})
    queue = str(answer.get("queue", ""))
    shown = sorted(target, key=_type_order) or ["vcore"]
    names = sorted(leaves)
    with_total = names != [queue]
    layout = _layout(
        barmode="group",
        height=max(240, 110 + 56 * (len(names) + int(with_total))),
        margin={"t": 50, "l": 170, "r": 30, "b": 30},
        legend={"orientation": "h", "y": -0.12},
    )
    _side_by_side(layout, [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown], 0.08)
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        ys = [plot_text(n) for n in names] + ([f"<b>{plot_text(queue)}</b>"] if with_total else [])
        shares = [cast(Mapping[str, int], leaves[n].get("preemptable") or {}) for n in names]
        claims = [cast(Mapping[str, int], leaves[n].get("claimed") or {}) for n in names]
        share_q = [s.get(t, 0) for s in shares] + ([target.get(t, 0)] if with_total else [])
        claim_q = [c.get(t, 0) for c in claims] + ([claimed.get(t, 0)] if with_total else [])
        for name, values, colour in (
            ("target share", share_q, MEASURE_COLOURS["preemptable"]),
            ("claimed", claim_q, VICTIM_COLOUR),
        ):
            data.append(
                _on(
                    {
                        "type": "bar",
                        "orientation": "h",
                        "y": ys,
                        "x": [in_units(t, v) for v in values],
                        "name": name,
                        "legendgroup": name,
                        "showlegend": index == 1,
                        "marker": {"color": colour},
                        "text": [format_quantity(t, v) for v in values],
                        "textposition": "auto",
                        "hovertext": [
                            f"{y}<br>{name}: {format_quantity(t, v)}"
                            for y, v in zip(ys, values, strict=True)
                        ],
                        "hoverinfo": "text",
                    },
                    index,
                )
            )
        _update(layout, _axis_name("y", index), autorange="reversed", showticklabels=index == 1)
    return {"data": data, "layout": layout}
