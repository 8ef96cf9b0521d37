"""The work lost to preemption as stacked bars: one bar per period, one colour per queue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date

from dashboard.charts.style import base_layout, plot_text, short_label

FigureDict = dict[str, object]


def work_lost_figure(
    periods: Sequence[date],
    by_queue: Mapping[str, Mapping[date, float]],
    *,
    rtype: str,
    unit: str,
    period: str,
) -> FigureDict:
    """Lost *rtype* (already in *unit*, e.g. core-hours) per period, stacked by queue.

    Queue names are user text: escaped in the legend and the hover text.
    """
    data: list[dict[str, object]] = []
    x = [p.isoformat() for p in periods]
    for queue in sorted(by_queue):
        values = by_queue[queue]
        shown = plot_text(queue)
        data.append(
            {
                "type": "bar",
                "name": plot_text(short_label(queue)),
                "x": x,
                "y": [values.get(p, 0.0) for p in periods],
                "hovertext": [
                    f"{shown}<br>{period} of {p.isoformat()}<br>"
                    f"lost {values.get(p, 0.0):,.3f} {plot_text(unit)} of {plot_text(rtype)}"
                    for p in periods
                ],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        barmode="stack",
        height=340,
        margin={"t": 20, "l": 20, "r": 20, "b": 40},
        xaxis={"type": "category", "title": {"text": f"{period} (UTC)"}, "automargin": True},
        yaxis={"title": {"text": plot_text(f"{rtype} lost ({unit})")}, "automargin": True},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
    )
    if not data:
        layout["xaxis"] = {"visible": False}
        layout["yaxis"] = {"visible": False}
        layout["annotations"] = [
            {
                "text": "No work lost to preemption in this window.",
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14},
            }
        ]
    return {"data": data, "layout": layout}
