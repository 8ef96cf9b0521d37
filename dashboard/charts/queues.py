"""Queue figures: the tree, one queue's bars, its usage over time; its state and hover text."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import timedelta

from dashboard.charts.style import (
    FENCE_COLOUR,
    MEASURE_COLOURS,
    STATE_MARKS,
    STATES,
    VICTIM_COLOUR,
    VICTIM_ON_CRIMSON,
    axis_name,
    base_layout,
    on_axis,
    padded_range,
    plot_text,
    short_label,
    stacked,
    update_layout,
)
from dashboard.charts.values import (
    FigureDict,
    QueueRow,
    QueueState,
    Resource,
    UsagePoint,
    resource_types,
)
from dashboard.display import format_quantity, in_units, unit_of


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


def quantity_of(res: Resource | None, rtype: str) -> int | None:
    if res is None:
        return None
    return res.get(rtype)


def queue_facts_text(row: QueueRow) -> str:
    """The scheduler's facts about a queue in one line: status, dynamic, applications.

    >>> queue_facts_text(QueueRow("root.t.x", status="Draining", dynamic=True,
    ...                           max_applications=2, running_apps=1))
    'status Draining · dynamic (from a child template) · running applications 1 of max 2'
    """
    parts = [f"status {plot_text(row.status)}"]
    if row.dynamic:
        parts.append("dynamic (from a child template)")
    running = "not reported" if row.running_apps is None else str(row.running_apps)
    limit = "no max" if row.max_applications is None else f"max {row.max_applications}"
    if row.running_apps is None and row.max_applications is None:
        return " · ".join(parts)
    parts.append(
        f"running applications {running} of {limit}"
        if row.max_applications is not None
        else f"running applications {running} ({limit})"
    )
    return " · ".join(parts)


def queue_hover(row: QueueRow, types: Sequence[str], selected: str | None = None) -> str:
    """Hover text for a queue: state and facts, then each type's figures in YuniKorn's words.

    allocated (as reported, preempting included), preempting, remaining
    (allocated - preempting, the engine's usage), guaranteed, max, preemptable.
    A row without reported figures (a plan's tree) shows only remaining.
    """
    label, _ = STATES[queue_state(row, selected)]
    lines = [f"<b>{plot_text(row.path)}</b>", f"state: {label}", queue_facts_text(row)]
    shown = ([selected] if selected else []) + [t for t in types if t != selected]
    held = row.held
    # without the scheduler's figures (a plan's or a config's tree) only the engine's
    # usage is known: allocated - preempting, named as such
    known = row.allocated is not None or bool(row.preempting)
    for t in shown:
        parts = [
            f"allocated {format_quantity(t, held.get(t, 0))}"
            if known
            else f"remaining {format_quantity(t, row.used.get(t, 0))}"
        ]
        if row.preempting.get(t):
            parts.append(f"preempting {format_quantity(t, row.preempting[t])}")
            parts.append(f"remaining {format_quantity(t, held.get(t, 0) - row.preempting[t])}")
        parts += [
            f"guaranteed {format_quantity(t, quantity_of(row.guaranteed, t))}",
            f"max {_max_text(t, row.max)}",
            f"preemptable {format_quantity(t, quantity_of(row.preemptable, t))}",
        ]
        if row.lowered_max is not None and t in row.lowered_max:
            where = "planned here" if row.lowered_planned else "in the cluster's config"
            parts.append(f"scheduled max {format_quantity(t, row.lowered_max[t])} ({where})")
        lines.append(f"{plot_text(t)}: " + " · ".join(parts))
    lines.append("remaining = allocated - preempting (not room left under the max)")
    return "<br>".join(lines)


def _max_text(rtype: str, res: Resource | None) -> str:
    value = quantity_of(res, rtype)
    return "not defined (unlimited)" if value is None else format_quantity(rtype, value)


def _marked(label: str, state: QueueState) -> str:
    mark = STATE_MARKS[state]
    return f"{mark} {label}" if mark else label


def tree_label(row: QueueRow, rtype: str | None = None) -> str:
    """A queue's icicle label: state mark, name, and its status when not Active or dynamic.

    >>> tree_label(QueueRow("root.legacy", status="Draining"))
    'legacy (Draining)'
    """
    label = _marked(short_label(row.name), queue_state(row, rtype))
    notes = [row.status] if row.status != "Active" else []
    if row.dynamic:
        notes.append("dynamic")
    return f"{label} ({', '.join(notes)})" if notes else label


#: The smallest a tree box's label is drawn, in px: below it the label is hidden.
TREE_LABEL_MIN_PX = 11


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
    colours = [STATES[queue_state(row, rtype)][1] for row in rows]
    hover = [queue_hover(row, types, rtype) for row in rows]
    lines, widths = _outline(ids, fence, victim_queues, levels_cut=maxdepth > 0, fills=colours)
    trace: dict[str, object] = {
        "type": "icicle",
        "ids": ids,
        "labels": [plot_text(tree_label(row, rtype)) for row in rows],
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
    layout = base_layout(
        margin={"t": 30, "l": 4, "r": 4, "b": 4},
        uirevision="tree",
        # a label too long for its box is hidden, not shrunk unreadable (its hover and
        # the list beside the figure name the queue)
        uniformtext={"mode": "hide", "minsize": TREE_LABEL_MIN_PX},
    )
    return {"data": [trace], "layout": layout}


def _outline(
    ids: Sequence[str],
    fence: str | None,
    victim_queues: Collection[str],
    *,
    levels_cut: bool = False,
    fills: Sequence[str] | None = None,
) -> tuple[list[str], list[float]]:
    """Per queue, its box's outline colour and width: victims' queues, then the fence.

    With *levels_cut* (some levels open only on a click), the queues above a victims'
    queue are outlined thinly in the victims' colour too, so that a victim deeper than
    the levels shown is still found from the top: a crimson trail leads down to it.
    A box filled with the victims' crimson (a queue over a lowered max, *fills* giving
    each box's fill) takes :data:`VICTIM_ON_CRIMSON` instead, which stands out on it.
    """
    victims = set(victim_queues)
    above: set[str] = set()
    if levels_cut:
        for path in victims:
            parts = path.split(".")
            above.update(".".join(parts[:end]) for end in range(1, len(parts)))
    lines: list[str] = []
    widths: list[float] = []
    for i, path in enumerate(ids):
        victim = VICTIM_COLOUR
        if fills is not None and fills[i] == VICTIM_COLOUR:
            victim = VICTIM_ON_CRIMSON
        if path in victims:
            lines.append(victim)
            widths.append(4)
        elif fence is not None and path == fence:
            lines.append(FENCE_COLOUR)
            widths.append(4)
        elif path in above:
            lines.append(victim)
            widths.append(2)
        elif fence is not None and path.startswith(fence + "."):
            lines.append(FENCE_COLOUR)
            widths.append(2)
        else:
            lines.append("rgba(255,255,255,0.8)")
            widths.append(1)
    return lines, widths


def levels_shown(queues: int) -> int:
    """How many levels a tree of *queues* queues shows at once (``-1``: all of them).

    Past :data:`ALL_LEVELS_UP_TO` queues, the deeper levels open on a click: the boxes
    stay readable, and the browser draws only the boxes shown first.
    """
    return -1 if queues <= ALL_LEVELS_UP_TO else LEVELS_WHEN_MANY


#: A tree of at most this many queues shows all its levels at once.
ALL_LEVELS_UP_TO = 60
#: Levels a bigger tree shows at once.
LEVELS_WHEN_MANY = 3


def outline_tree(
    figure: FigureDict, *, fence: str | None = None, victim_queues: Collection[str] = ()
) -> FigureDict:
    """*figure* (a :func:`queue_tree_figure`) with *fence* and *victim_queues* outlined.

    A new figure sharing everything else with *figure*, which is left as it is:
    the tree of one snapshot is built once and outlined for each run.
    """
    data = figure["data"]
    assert isinstance(data, list), "a queue_tree_figure has a list of traces"
    trace = data[0]
    cut = tree_levels(figure) is not None
    fills = trace["marker"].get("colors")
    lines, widths = _outline(
        trace["ids"],
        fence,
        victim_queues,
        levels_cut=cut,
        fills=fills if isinstance(fills, list) else None,
    )
    marker = {**trace["marker"], "line": {"color": lines, "width": widths}}
    return {**figure, "data": [{**trace, "marker": marker}, *data[1:]]}


def on_crimson(figure: FigureDict) -> bool:
    """Whether *figure* (an :func:`outline_tree`) outlines victims on a crimson box."""
    data = figure["data"]
    assert isinstance(data, list), "a queue_tree_figure has a list of traces"
    lines = data[0]["marker"]["line"]["color"]
    return VICTIM_ON_CRIMSON in lines


def tree_levels(figure: FigureDict) -> int | None:
    """How many levels *figure* (a :func:`queue_tree_figure`) shows at once; None when
    it shows them all."""
    data = figure["data"]
    assert isinstance(data, list), "a queue_tree_figure has a list of traces"
    depth = data[0].get("maxdepth")
    return depth if isinstance(depth, int) and depth > 0 else None


def queue_bars_figure(row: QueueRow, types: Sequence[str] | None = None) -> FigureDict:
    """Guaranteed, allocated, preempting, remaining, max and preemptable of one queue.

    One panel per resource type. allocated is as YuniKorn reports it (preempting
    included), remaining = allocated - preempting (the engine's usage); preempting
    is drawn only where some of the type is being preempted.

    A defined value is a solid bar labelled with its value (0 gives an empty
    bar labelled "0"); an undefined one is a hatched ghost across the panel
    labelled "not defined", so the two never look alike.
    """
    shown = list(types) if types is not None else resource_types([row])
    if not shown:
        shown = ["vcore", "memory"]
    height = 70 + 185 * len(shown)
    layout = base_layout(
        barmode="overlay",
        height=height,
        margin={"t": 40, "l": 90, "r": 20, "b": 20},
        title={"text": plot_text(row.path), "x": 0, "font": {"size": 14}},
        showlegend=False,
    )
    stacked(
        layout,
        [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        min(0.3, 80 / height),
    )
    held = row.held
    measures: list[tuple[str, Resource | None]] = [
        ("guaranteed", row.guaranteed),
        ("allocated", held),
        ("preempting", row.preempting),
        ("remaining", row.remaining),
        ("max", row.max),
        ("preemptable", row.preemptable),
    ]
    # always known (0 when nothing is held); preempting only where some is being preempted
    known = {"allocated", "remaining"}
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        defined: list[tuple[str, int]] = []
        undefined: list[str] = []
        for name, res in measures:
            if name == "preempting":
                if row.preempting.get(t):
                    defined.append((name, row.preempting[t]))
                continue
            value = (res or {}).get(t, 0) if name in known else quantity_of(res, t)
            if value is None:
                undefined.append(name)
            else:
                defined.append((name, value))
        extent = max([in_units(t, v) for _, v in defined] + [0.0]) * 1.15 or 1.0
        data.append(
            on_axis(
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
            on_axis(
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
        update_layout(
            layout,
            axis_name("y", index),
            categoryorder="array",
            categoryarray=[
                "preemptable",
                "max",
                "remaining",
                "preempting",
                "allocated",
                "guaranteed",
            ],
        )
        update_layout(layout, axis_name("x", index), range=[0, extent * 1.25], rangemode="tozero")
    return {"data": data, "layout": layout}


def per_type_over_time_layout(shown: Sequence[str], *, row_height: int) -> dict[str, object]:
    """The layout of figures over time with one stacked plot per resource type of *shown*
    (its unit in the title), sharing one time axis."""
    layout = base_layout(
        height=max(260, row_height * len(shown)),
        margin={"t": 40, "l": 60, "r": 20, "b": 30},
        legend={"orientation": "h", "y": 1.1},
        hovermode="x unified",
    )
    stacked(
        layout,
        [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown],
        min(0.12, 0.5 / len(shown)),
        shared_x=True,
    )
    return layout


def usage_over_time_figure(points: Sequence[UsagePoint], types: Sequence[str]) -> FigureDict:
    """A queue's allocated, remaining, guaranteed and max per type across stored snapshots.

    allocated is as YuniKorn reports it (preempting included); remaining is
    allocated - preempting (the engine's usage).

    Undefined limits leave gaps (``None``), never a line at 0.
    """
    ordered = sorted(points, key=lambda p: p.at)
    shown = list(types) or ["vcore"]
    layout = per_type_over_time_layout(shown, row_height=200)
    xs = [p.at.isoformat() for p in ordered]
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        series: list[tuple[str, list[int | None], dict[str, object]]] = [
            ("allocated", [p.held.get(t, 0) for p in ordered], {"width": 1.5}),
            ("remaining", [p.used.get(t, 0) for p in ordered], {"width": 2.5}),
            ("guaranteed", [quantity_of(p.guaranteed, t) for p in ordered], {"dash": "dash"}),
            ("max", [quantity_of(p.max, t) for p in ordered], {"dash": "dot", "shape": "hv"}),
        ]
        for name, values, line in series:
            data.append(
                on_axis(
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
        update_layout(layout, axis_name("y", index), rangemode="tozero")
    span = padded_range([p.at for p in ordered], timedelta(hours=1))
    if span is not None:
        for index in range(1, len(shown) + 1):
            update_layout(layout, axis_name("x", index), range=span)
    return {"data": data, "layout": layout}
