"""Plotly figures for the pages: engine answers and snapshot data -> figure dicts.

This module owns how the dashboard *draws* queues, nodes, runs and plans.  It
takes plain values (the dataclasses below, engine answers as dicts) and returns
Plotly figure dicts ready for ``json_script``; it never touches the ORM.

Two rules hold everywhere:

* "Not defined" is not 0.  An undefined max is unlimited and an undefined
  guaranteed is fully preemptable; hover text says "not defined" and bars draw
  a hatched ghost instead of a zero-length bar.
* Every piece of user text (queue paths, node ids, application names) goes
  through :func:`plot_text` before it reaches a label, tick or hover text,
  because Plotly renders a subset of HTML there.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, cast

import plotly.graph_objects as go
from plotly.subplots import make_subplots

Resource = Mapping[str, int]
FigureDict = dict[str, object]
QueueState = Literal["within", "above", "at_max", "over_max"]

GIB = 1 << 30
MILLI = 1000

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


def unit_of(rtype: str) -> tuple[str, int]:
    """The display unit and its size in internal units for a resource type.

    >>> unit_of("vcore"), unit_of("memory"), unit_of("pods")
    (('cores', 1000), ('GiB', 1073741824), ('', 1))
    """
    if rtype == "vcore":
        return "cores", MILLI
    if _is_bytes(rtype):
        return "GiB", GIB
    return "", 1


def _is_bytes(rtype: str) -> bool:
    return rtype == "memory" or rtype.endswith("storage") or rtype.endswith("memory")


def in_units(rtype: str, quantity: int) -> float:
    """*quantity* in the display unit of *rtype* (cores, GiB, count)."""
    return quantity / unit_of(rtype)[1]


def _trim(value: float, places: int) -> str:
    text = f"{value:,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_quantity(rtype: str, quantity: int | None) -> str:
    """A quantity in human units, exact: cores for vcore, binary bytes for memory.

    ``None`` is "not defined".  When a byte value is not a round number in the
    chosen unit, the exact byte count follows in brackets.

    >>> format_quantity("vcore", 2500), format_quantity("vcore", 1)
    ('2.5 cores', '0.001 cores')
    >>> format_quantity("memory", 8 * 2**30), format_quantity("memory", 1536 * 2**20)
    ('8 GiB', '1.5 GiB')
    >>> format_quantity("memory", 1000)
    '1,000 B'
    >>> format_quantity("memory", 10**9)
    '953.674 MiB (1,000,000,000 B)'
    >>> format_quantity("nvidia.com/gpu", 0), format_quantity("pods", None)
    ('0', 'not defined')
    """
    if quantity is None:
        return "not defined"
    if rtype == "vcore":
        cores = quantity / MILLI
        return f"{_trim(cores, 3)} {'core' if quantity == MILLI else 'cores'}"
    if _is_bytes(rtype):
        sign = "-" if quantity < 0 else ""
        size = abs(quantity)
        for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if size >= scale:
                shown = f"{sign}{_trim(size / scale, 3)} {unit}"
                if (size * 1000) % scale != 0:  # not exact in 3 decimals: add the bytes
                    shown += f" ({quantity:,} B)"
                return shown
        return f"{quantity:,} B"
    return f"{quantity:,}"


def format_resource(resource: Resource | None, *, empty: str = "not defined") -> str:
    """Every type of *resource* in human units; ``None`` says *empty*.

    >>> format_resource({"vcore": 2000, "memory": 2**30})
    'memory 1 GiB, vcore 2 cores'
    >>> format_resource(None), format_resource({})
    ('not defined', 'nothing')
    """
    if resource is None:
        return empty
    if not resource:
        return "nothing"
    return ", ".join(f"{t} {format_quantity(t, q)}" for t, q in sorted(resource.items()))


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


def _figure(fig: go.Figure) -> FigureDict:
    return cast(FigureDict, fig.to_plotly_json())


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
    trace = go.Icicle(
        ids=ids,
        labels=[plot_text(row.name) for row in rows],
        parents=[row.parent if row.parent in present else "" for row in rows],
        hovertext=hover,
        hoverinfo="text",
        textinfo="label",
        marker={"colors": colours, "line": {"color": lines, "width": widths}},
        maxdepth=maxdepth,
        tiling={"orientation": "v"},
        root={"color": "rgba(0,0,0,0)"},
        leaf={"opacity": 1.0},
        # plotly.js 4.1 draws NaN paths in the path bar when the level changes; the page
        # shows its own breadcrumb instead
        pathbar={"visible": False},
        sort=False,
    )
    if level is not None and level in present:
        # zooming into a leaf draws nothing (plotly.js computes NaN paths): show its parent
        parents = {row.parent for row in rows}
        trace.level = level if level in parents else (level.rsplit(".", 1)[0] or level)
    layout = go.Layout(_BASE_LAYOUT, margin={"t": 30, "l": 4, "r": 4, "b": 4}, uirevision="tree")
    # the trace is validated once, above; go.Figure(trace) would validate its 1,000-long
    # arrays a second time
    return {"data": [trace.to_plotly_json()], "layout": layout.to_plotly_json()}


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
    fig = make_subplots(
        rows=len(shown),
        cols=1,
        subplot_titles=[plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        vertical_spacing=min(0.3, 80 / height),
    )
    measures: list[tuple[str, Resource | None]] = [
        ("guaranteed", row.guaranteed),
        ("used", row.used),
        ("max", row.max),
        ("preemptable", row.preemptable),
    ]
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
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=[name for name, _ in defined],
                x=[in_units(t, v) for _, v in defined],
                text=[format_quantity(t, v) for _, v in defined],
                textposition="outside",
                cliponaxis=False,
                marker={"color": [MEASURE_COLOURS[name] for name, _ in defined]},
                hovertext=[
                    f"{name}: {format_quantity(t, v)} ({plot_text(t)})" for name, v in defined
                ],
                hoverinfo="text",
                name=f"{t} defined",
                showlegend=False,
            ),
            row=index,
            col=1,
        )
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=undefined,
                x=[extent] * len(undefined),
                text=["not defined"] * len(undefined),
                textposition="inside",
                insidetextanchor="middle",
                textfont={"color": "#868e96"},  # mid grey: readable on light and dark pages
                marker={
                    "color": "rgba(134,142,150,0.08)",
                    "line": {"color": "rgba(134,142,150,0.7)", "width": 1},
                    "pattern": {"shape": "/", "fgcolor": "rgba(134,142,150,0.55)", "size": 8},
                },
                hovertext=[
                    f"{name}: not defined"
                    + (" (unlimited)" if name == "max" else "")
                    + (" (fully preemptable)" if name == "guaranteed" else "")
                    for name in undefined
                ],
                hoverinfo="text",
                name=f"{t} not defined",
                showlegend=False,
            ),
            row=index,
            col=1,
        )
        fig.update_yaxes(
            categoryorder="array",
            categoryarray=["preemptable", "max", "used", "guaranteed"],
            row=index,
            col=1,
        )
        fig.update_xaxes(range=[0, extent * 1.25], rangemode="tozero", row=index, col=1)
    fig.update_layout(
        _BASE_LAYOUT,
        barmode="overlay",
        height=height,
        margin={"t": 40, "l": 90, "r": 20, "b": 20},
        title={"text": plot_text(row.path), "x": 0, "font": {"size": 14}},
    )
    return _figure(fig)


def node_heatmap_figure(
    nodes: Sequence[NodeRow],
    types: Sequence[str] | None = None,
    *,
    highlight: Collection[str] = (),
) -> FigureDict:
    """Utilisation (allocated / capacity, %) per node and resource type.

    Nodes run along x (sorted by id), types along y.  A node without capacity
    in a type has no cell.  Nodes in *highlight* (for example those holding
    what-if victims) get a crimson marker above their column.
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
        for n in ordered:
            cap = n.capacity.get(t)
            used = n.allocated.get(t, 0)
            head = f"<b>{plot_text(n.id)}</b>{'' if n.schedulable else ' (unschedulable)'}"
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
    fig = go.Figure(
        go.Heatmap(
            x=labels,
            y=[plot_text(t) for t in types],
            z=z,
            hovertext=text,
            hoverinfo="text",
            zmin=0,
            zmax=100,
            colorscale=[[0, "#e7f5ff"], [0.6, "#4dabf7"], [0.85, "#f08c00"], [1, "#c2255c"]],
            colorbar={"title": {"text": "%"}, "thickness": 12},
            xgap=1 if len(ordered) < 200 else 0,
            ygap=2,
        )
    )
    wanted = set(highlight)
    for index, n in enumerate(ordered):
        if n.id not in wanted:
            continue
        # an outline around the node's column: victims are on this node
        fig.add_shape(
            type="rect",
            xref="x",
            yref="paper",
            x0=index - 0.5,
            x1=index + 0.5,
            y0=0,
            y1=1,
            line={"color": VICTIM_COLOUR, "width": 3},
            fillcolor="rgba(0,0,0,0)",
        )
        fig.add_annotation(
            x=index,
            xref="x",
            y=1,
            yref="paper",
            yanchor="bottom",
            text="▼ victims",
            showarrow=False,
            font={"color": VICTIM_COLOUR, "size": 11},
        )
    fig.update_layout(
        _BASE_LAYOUT,
        height=140 + 46 * max(1, len(types)),
        margin={"t": 30, "l": 110, "r": 20, "b": 80},
        xaxis={"type": "category", "showticklabels": len(ordered) <= 60, "title": "nodes"},
        yaxis={"type": "category", "autorange": "reversed"},
        showlegend=False,
    )
    return _figure(fig)


def history_timeline_figure(runs: Sequence[RunRow]) -> FigureDict:
    """Preemption runs over time: one marker per run, row per queue, colour per outcome.

    Marker size grows with the number of victims; ``customdata`` carries the
    run id so the page can open the run on click.
    """
    fig = go.Figure()
    by_outcome: dict[str, list[RunRow]] = {}
    for run in sorted(runs, key=lambda r: (r.started, r.id)):
        by_outcome.setdefault(run.outcome, []).append(run)
    for outcome, group in sorted(by_outcome.items()):
        fig.add_trace(
            go.Scatter(
                x=[r.started.isoformat() for r in group],
                y=[plot_text(r.queue) for r in group],
                mode="markers",
                name=plot_text(outcome.replace("_", " ")),
                marker={
                    "size": [min(30, 10 + 2 * r.victims) for r in group],
                    "color": OUTCOME_COLOURS.get(outcome, "#868e96"),
                    "line": {"width": 1, "color": "rgba(255,255,255,0.9)"},
                },
                customdata=[r.id for r in group],
                hovertext=[_run_hover(r) for r in group],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        _BASE_LAYOUT,
        height=max(260, 120 + 28 * len({r.queue for r in runs})),
        margin={"t": 20, "l": 160, "r": 20, "b": 40},
        xaxis={
            "type": "date",
            "title": None,
            "range": _padded_range([r.started for r in runs], timedelta(minutes=10)),
        },
        yaxis={"type": "category", "title": None},
        legend={"orientation": "h", "y": 1.08},
    )
    return _figure(fig)


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
    fig = make_subplots(
        rows=len(shown),
        cols=1,
        shared_xaxes=True,
        subplot_titles=[plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        vertical_spacing=min(0.12, 0.5 / len(shown)),
    )
    xs = [p.at.isoformat() for p in ordered]
    for index, t in enumerate(shown, start=1):
        series: list[tuple[str, list[int | None], dict[str, object]]] = [
            ("used", [p.used.get(t, 0) for p in ordered], {"width": 2.5}),
            ("guaranteed", [_get(p.guaranteed, t) for p in ordered], {"dash": "dash"}),
            ("max", [_get(p.max, t) for p in ordered], {"dash": "dot", "shape": "hv"}),
        ]
        for name, values, line in series:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=[None if v is None else in_units(t, v) for v in values],
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=index == 1,
                    line={"color": MEASURE_COLOURS[name], **line},
                    connectgaps=False,
                    hovertext=[f"{name} {format_quantity(t, v)}" for v in values],
                    hoverinfo="text+x",
                ),
                row=index,
                col=1,
            )
        fig.update_yaxes(rangemode="tozero", row=index, col=1)
    span = _padded_range([p.at for p in ordered], timedelta(hours=1))
    if span is not None:
        fig.update_xaxes(range=span)
    fig.update_layout(
        _BASE_LAYOUT,
        height=max(260, 200 * len(shown)),
        margin={"t": 40, "l": 60, "r": 20, "b": 30},
        legend={"orientation": "h", "y": 1.1},
        hovermode="x unified",
    )
    return _figure(fig)


def quota_plan_figure(answer: Mapping[str, object]) -> FigureDict:
    """A quota-decrease plan: per leaf and type, its share of the target against claimed.

    *answer* is the engine's ``quota_change`` answer as a dict (``to_dict()``).
    The last group, the queue itself, compares the whole target with the total
    claimed.
    """
    target = cast(Mapping[str, int], answer.get("preemptable") or {})
    claimed = cast(Mapping[str, int], answer.get("claimed") or {})
    leaves = cast(Mapping[str, Mapping[str, object]], answer.get("leaves") or {})
    queue = str(answer.get("queue", ""))
    shown = sorted(target, key=_type_order) or ["vcore"]
    fig = make_subplots(
        rows=1,
        cols=len(shown),
        subplot_titles=[plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
    )
    names = sorted(leaves)
    with_total = names != [queue]
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
            fig.add_trace(
                go.Bar(
                    orientation="h",
                    y=ys,
                    x=[in_units(t, v) for v in values],
                    name=name,
                    legendgroup=name,
                    showlegend=index == 1,
                    marker={"color": colour},
                    text=[format_quantity(t, v) for v in values],
                    textposition="auto",
                    hovertext=[
                        f"{y}<br>{name}: {format_quantity(t, v)}"
                        for y, v in zip(ys, values, strict=True)
                    ],
                    hoverinfo="text",
                ),
                row=1,
                col=index,
            )
        fig.update_yaxes(autorange="reversed", showticklabels=index == 1, row=1, col=index)
    fig.update_layout(
        _BASE_LAYOUT,
        barmode="group",
        height=max(240, 110 + 56 * (len(names) + int(with_total))),
        margin={"t": 50, "l": 170, "r": 30, "b": 30},
        legend={"orientation": "h", "y": -0.12},
    )
    return _figure(fig)
