"""Colours, the base layout and subplot helpers shared by the figures; user text made safe."""

from __future__ import annotations

import copy
import html
from collections.abc import Sequence
from datetime import datetime, timedelta

from dashboard.charts.values import QueueState

#: Display order of states, least to most pressing, with label and colour.
STATES: dict[QueueState, tuple[str, str]] = {
    "within": ("within guaranteed", "#2f9e6e"),
    "above": ("above guaranteed", "#d9a21b"),
    "at_max": ("at max", "#e8590c"),
    "over_max": ("over a lowered max", "#c2255c"),
}

#: A mark per state, so that a queue's state is never told by colour alone (the
#: icicle's labels, the legend, the queue list).
STATE_MARKS: dict[QueueState, str] = {
    "within": "",
    "above": "▲",
    "at_max": "■",
    "over_max": "✖",
}

#: Icicle labels longer than this are shortened in the middle (the full path is in
#: the hover text and the queue list beside the figure).
LABEL_CHARS = 28


def short_label(name: str, limit: int = LABEL_CHARS) -> str:
    """*name* shortened in the middle to *limit* characters (start and end kept).

    >>> short_label("x" * 10), short_label("a" * 20 + "-team-" + "b" * 40, 20)
    ('xxxxxxxxxx', 'aaaaaaaaaaaaa…bbbbbb')
    """
    if len(name) <= limit:
        return name
    tail = max(4, limit // 3)
    return name[: limit - tail - 1] + "…" + name[-tail:]


MEASURE_COLOURS = {
    "guaranteed": "#2f9e6e",
    "used": "#3b6fd8",
    "allocated": "#1c4fa8",
    "preempting": "#c2255c",
    "remaining": "#3b6fd8",
    "max": "#6c757d",
    "preemptable": "#d9a21b",
}


FENCE_COLOUR = "#1c7ed6"


VICTIM_COLOUR = "#c2255c"


#: The victims' outline on a box filled with :data:`VICTIM_COLOUR` (a queue over a
#: lowered max): yellow, 3.9:1 against the crimson fill (crimson on crimson is 1:1).
VICTIM_ON_CRIMSON = "#ffd43b"


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


BASE_LAYOUT: dict[str, object] = {
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 13},
    "hoverlabel": {"align": "left", "font": {"size": 12}},
}


def plot_text(text: str) -> str:
    """*text* made safe for a Plotly label, tick or hover text.

    Plotly turns ``<b>``, ``<br>``, ``<a href>`` ... into SVG and decodes
    ``&lt;`` / ``&gt;`` / ``&amp;`` back into characters (but not ``&quot;``),
    so escaping ``& < >`` shows any name as the text it is.

    >>> plot_text("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return html.escape(text, quote=False)


def base_layout(**extra: object) -> dict[str, object]:
    layout = copy.deepcopy(BASE_LAYOUT)
    layout.update(extra)
    return layout


def axis_name(kind: str, index: int) -> str:
    """``xaxis`` / ``xaxis2`` (layout keys) for subplot *index* (1-based)."""
    return f"{kind}axis" if index == 1 else f"{kind}axis{index}"


def axis_ref(kind: str, index: int) -> str:
    """``x`` / ``x2`` (trace references) for subplot *index* (1-based)."""
    return kind if index == 1 else f"{kind}{index}"


def stacked(
    layout: dict[str, object], titles: Sequence[str], spacing: float, *, shared_x: bool = False
) -> None:
    """Stack len(titles) subplots vertically (first on top), each titled, into *layout*."""
    n = len(titles)
    height = (1.0 - spacing * (n - 1)) / n
    annotations: list[dict[str, object]] = []
    for i, title in enumerate(titles, start=1):
        top = 1.0 - (i - 1) * (height + spacing)
        bottom = max(0.0, top - height)
        xaxis: dict[str, object] = {"anchor": axis_ref("y", i), "domain": [0.0, 1.0]}
        if shared_x and i > 1:
            xaxis["matches"] = "x"
        if shared_x and i < n:
            xaxis["showticklabels"] = False
        layout[axis_name("x", i)] = xaxis
        layout[axis_name("y", i)] = {"anchor": axis_ref("x", i), "domain": [bottom, top]}
        annotations.append(subplot_title(title, 0.5, top))
    layout["annotations"] = annotations


def side_by_side(layout: dict[str, object], titles: Sequence[str], spacing: float) -> None:
    """Place len(titles) subplots side by side (first on the left), each titled."""
    n = len(titles)
    width = (1.0 - spacing * (n - 1)) / n
    annotations: list[dict[str, object]] = []
    for i, title in enumerate(titles, start=1):
        left = (i - 1) * (width + spacing)
        right = min(1.0, left + width)
        layout[axis_name("x", i)] = {"anchor": axis_ref("y", i), "domain": [left, right]}
        layout[axis_name("y", i)] = {"anchor": axis_ref("x", i), "domain": [0.0, 1.0]}
        annotations.append(subplot_title(title, (left + right) / 2, 1.0))
    layout["annotations"] = annotations


def subplot_title(text: str, x: float, y: float) -> dict[str, object]:
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


def on_axis(trace: dict[str, object], index: int) -> dict[str, object]:
    """*trace* drawn on subplot *index* (1-based)."""
    trace["xaxis"] = axis_ref("x", index)
    trace["yaxis"] = axis_ref("y", index)
    return trace


def update_layout(layout: dict[str, object], key: str, **values: object) -> None:
    axis = layout.setdefault(key, {})
    assert isinstance(axis, dict)
    axis.update(values)


def padded_range(times: Sequence[datetime], minimum: timedelta) -> list[str] | None:
    """An x range at least *minimum* wide around *times* (``None``: let Plotly choose)."""
    if not times:
        return None
    low, high = min(times), max(times)
    if high - low >= minimum:
        return None
    pad = (minimum - (high - low)) / 2
    return [(low - pad).isoformat(), (high + pad).isoformat()]
