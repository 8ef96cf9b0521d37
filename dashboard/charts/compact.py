"""Compact hover text: the repeated words of a big figure's hover text sent once.

A 1,000-queue tree carries ~400 KB of hover text, most of it the same words
("state: within guaranteed", "max not defined (unlimited)", " · ") over and over.
:func:`compact_hover` moves every trace's ``hovertext`` into a table of distinct
pieces plus, per point, the indexes of its pieces; the page's script joins them
back (``static/dashboard/js/app.js``) before drawing.  The pieces are cut from the
finished, already escaped text, so joining them gives back exactly that text and
the script never builds markup of its own.
"""

from __future__ import annotations

from typing import Any

from dashboard.charts.values import FigureDict

#: Hover text is cut into lines, and lines into figures; joining back gives the same text.
LINE = "<br>"
FIGURE = " · "

#: The figure key the script looks for.
KEY = "compactHover"


def compact_hover(figure: FigureDict) -> FigureDict:
    """*figure* with each trace's list of hover texts replaced by piece indexes.

    Adds ``figure["compactHover"] = {"parts": [...], "traces": {index: rows}}``
    where a row is the point's lines, each a list of indexes into ``parts`` (its
    figures, joined by " · "; lines joined by "<br>"); traces without a list
    of strings as ``hovertext`` are left alone.
    """
    data: list[dict[str, Any]] = list(figure.get("data") or [])  # type: ignore[call-overload]
    parts: list[str] = []
    index: dict[str, int] = {}
    traces: dict[str, list[list[list[int]]]] = {}
    out_data = []
    for i, trace in enumerate(data):
        texts = trace.get("hovertext")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            out_data.append(trace)
            continue
        rows = []
        for text in texts:
            row = []
            for line in text.split(LINE):
                pieces = []
                for piece in line.split(FIGURE):
                    k = index.get(piece)
                    if k is None:
                        k = index[piece] = len(parts)
                        parts.append(piece)
                    pieces.append(k)
                row.append(pieces)
            rows.append(row)
        traces[str(i)] = rows
        out_data.append({k: v for k, v in trace.items() if k != "hovertext"})
    if not traces:
        return figure
    return {**figure, "data": out_data, KEY: {"parts": parts, "traces": traces}}


def expand_hover(figure: FigureDict) -> FigureDict:
    """The inverse of :func:`compact_hover` (what the page's script does)."""
    compact = figure.get(KEY)
    if not isinstance(compact, dict):
        return figure
    parts = compact["parts"]
    data = [dict(t) for t in figure["data"]]  # type: ignore[attr-defined]
    for i, rows in compact["traces"].items():
        data[int(i)]["hovertext"] = [
            LINE.join(FIGURE.join(parts[k] for k in line) for line in row) for row in rows
        ]
    return {k: v for k, v in figure.items() if k != KEY} | {"data": data}
