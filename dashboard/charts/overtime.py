"""A queue over time: step chart of used against guaranteed and max, preemptions by day and node.

Plain values in, Plotly figure dicts out; every name (queue, node) made safe with
:func:`~dashboard.charts.style.plot_text` wherever Plotly shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from dashboard.charts.queues import per_type_over_time_layout, quantity_of
from dashboard.charts.style import (
    MEASURE_COLOURS,
    axis_name,
    base_layout,
    on_axis,
    plot_text,
    update_layout,
)
from dashboard.charts.values import FigureDict, UsagePoint
from dashboard.display import format_quantity, in_units

#: Predicted and observed never look alike (the history's colours for them).
NATURE_COLOURS = {"predicted": "#7048e8", "observed": "#c2255c"}
#: Nodes drawn in the per-node chart (the most preempted; the table lists the rest).
NODES_DRAWN = 20


def _empty(text: str) -> FigureDict:
    layout = base_layout(
        height=160,
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[
            {
                "text": text,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14},
            }
        ],
    )
    return {"data": [], "layout": layout}


def usage_steps_figure(
    queue: str,
    points: Sequence[UsagePoint],
    types: Sequence[str],
    end: datetime,
    window: tuple[datetime, datetime] | None = None,
) -> FigureDict:
    """Per type, the queue's used, allocated, guaranteed and max as steps until *end*.

    Each point holds until the next one (``line.shape`` ``hv``); the last is
    repeated at *end* (where the data ends) so that its step is drawn; when it ends
    where it starts (one snapshot, nothing after it) the points are marked, on the
    time axis of *window* (else Plotly would zoom to a millisecond around them). An
    undefined limit is a gap.
    """
    if not points:
        return _empty("No snapshot of the window holds this queue: nothing to draw.")
    shown = list(types) or ["vcore"]
    layout = per_type_over_time_layout(shown, row_height=220)
    ordered = [*points, points[-1]]
    xs = [p.at.isoformat() for p in points] + [max(end, points[-1].at).isoformat()]
    mode = "lines" if end > points[-1].at else "lines+markers"
    name = plot_text(queue)
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        series: list[tuple[str, list[int | None], dict[str, object]]] = [
            ("used", [p.used.get(t, 0) for p in ordered], {"width": 2.5}),
            ("allocated", [p.held.get(t, 0) for p in ordered], {"width": 1}),
            ("guaranteed", [quantity_of(p.guaranteed, t) for p in ordered], {"dash": "dash"}),
            ("max", [quantity_of(p.max, t) for p in ordered], {"dash": "dot"}),
        ]
        for label, values, line in series:
            data.append(
                on_axis(
                    {
                        "type": "scatter",
                        "x": xs,
                        "y": [None if v is None else in_units(t, v) for v in values],
                        "mode": mode,
                        "name": label,
                        "legendgroup": label,
                        "showlegend": index == 1,
                        "line": {"color": MEASURE_COLOURS[label], "shape": "hv", **line},
                        "connectgaps": False,
                        "hovertext": [f"{name} · {label} {format_quantity(t, v)}" for v in values],
                        "hoverinfo": "text+x",
                    },
                    index,
                )
            )
        update_layout(layout, axis_name("y", index), rangemode="tozero")
    if mode != "lines" and window is not None:
        for index in range(1, len(shown) + 1):
            update_layout(
                layout, axis_name("x", index), range=[window[0].isoformat(), window[1].isoformat()]
            )
    return {"data": data, "layout": layout}


def preemptions_per_day_figure(queue: str, days: Sequence[tuple[date, int, int]]) -> FigureDict:
    """Victims taken from the queue per UTC day: (day, predicted, observed), stacked bars."""
    if not any(p or o for _, p, o in days):
        return _empty("No predicted or observed preemption of this queue in the window.")
    name = plot_text(queue)
    xs = [d.isoformat() for d, _, _ in days]
    data: list[dict[str, object]] = []
    for i, nature in enumerate(("predicted", "observed"), start=1):
        counts = [row[i] for row in days]
        data.append(
            {
                "type": "bar",
                "x": xs,
                "y": counts,
                "name": f"{nature} victims",
                "marker": {"color": NATURE_COLOURS[nature]},
                "hovertext": [
                    f"{name} · {d} · {c} {nature} victim(s)"
                    for d, c in zip(xs, counts, strict=True)
                ],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=280,
        barmode="stack",
        margin={"t": 30, "l": 50, "r": 20, "b": 40},
        legend={"orientation": "h", "y": 1.15},
        xaxis={"type": "date", "title": {"text": "UTC day"}},
        yaxis={"title": {"text": "victims"}, "rangemode": "tozero"},
    )
    return {"data": data, "layout": layout}


def preemptions_per_node_figure(queue: str, nodes: Sequence[tuple[str, int, int]]) -> FigureDict:
    """Victims per node: (node, predicted, observed), most first, as horizontal bars."""
    drawn = list(nodes[:NODES_DRAWN])
    if not drawn:
        return _empty("No predicted or observed preemption of this queue in these 48 hours.")
    name = plot_text(queue)
    # top of the chart = most preempted: Plotly draws the first category at the bottom
    drawn.reverse()
    labels = [plot_text(node or "(node not known)") for node, _, _ in drawn]
    data: list[dict[str, object]] = []
    for i, nature in enumerate(("predicted", "observed"), start=1):
        counts = [row[i] for row in drawn]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "y": labels,
                "x": counts,
                "name": f"{nature} victims",
                "marker": {"color": NATURE_COLOURS[nature]},
                "hovertext": [
                    f"{name} · {label} · {c} {nature} victim(s)"
                    for label, c in zip(labels, counts, strict=True)
                ],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=max(200, 24 * len(drawn) + 80),
        barmode="stack",
        margin={"t": 30, "l": 140, "r": 20, "b": 40},
        legend={"orientation": "h", "y": 1.1},
        xaxis={"title": {"text": "victims"}, "rangemode": "tozero"},
        yaxis={"type": "category", "automargin": True},
    )
    return {"data": data, "layout": layout}
