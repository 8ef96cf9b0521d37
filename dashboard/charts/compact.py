"""Compact hover text: the repeated words of a big figure's hover text sent once.

A big tree's hover text is most of its page's weight, and most of it the same words
("state: within guaranteed", "max not defined (unlimited)", " · ") over and over.
:func:`compact_hover` moves every trace's ``hovertext`` into a table of distinct
pieces plus, per point, the indexes of its pieces; the page's script joins them
back (``static/dashboard/js/figures.js``) before drawing.  The pieces are cut from the
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
    """*figure* with each trace's hover texts replaced by piece indexes.

    Adds ``figure["compactHover"] = {"parts": [...], "traces": {index: rows}}``
    where a row is one point's lines, each a list of indexes into ``parts`` (its
    figures, joined by " · "; lines joined by "<br>"). A heatmap's grid of hover
    texts (a list per row of cells) goes under ``"grids"`` instead, as a list of
    rows per grid row. Traces whose ``hovertext`` is neither are left alone.
    """
    data: list[dict[str, Any]] = list(figure.get("data") or [])  # type: ignore[call-overload]
    parts: list[str] = []
    index: dict[str, int] = {}

    def row_of(text: str) -> list[list[int]]:
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
        return row

    traces: dict[str, list[list[list[int]]]] = {}
    grids: dict[str, list[list[list[list[int]]]]] = {}
    out_data = []
    for i, trace in enumerate(data):
        texts = trace.get("hovertext")
        if not isinstance(texts, list):
            out_data.append(trace)
            continue
        if _strings(texts):
            traces[str(i)] = [row_of(t) for t in texts]
        elif texts and all(_strings(r) for r in texts):
            grids[str(i)] = [[row_of(t) for t in r] for r in texts]
        else:
            out_data.append(trace)
            continue
        out_data.append({k: v for k, v in trace.items() if k != "hovertext"})
    if not traces and not grids:
        return figure
    compact: dict[str, object] = {"parts": parts, "traces": traces}
    if grids:
        compact["grids"] = grids
    return {**figure, "data": out_data, KEY: compact}


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def expand_hover(figure: FigureDict) -> FigureDict:
    """The inverse of :func:`compact_hover` (what the page's script does)."""
    compact = figure.get(KEY)
    if not isinstance(compact, dict):
        return figure
    parts = compact["parts"]
    data = [dict(t) for t in figure["data"]]  # type: ignore[attr-defined]

    def text_of(row: list[list[int]]) -> str:
        return LINE.join(FIGURE.join(parts[k] for k in line) for line in row)

    for i, rows in compact["traces"].items():
        data[int(i)]["hovertext"] = [text_of(row) for row in rows]
    for i, grid in compact.get("grids", {}).items():
        data[int(i)]["hovertext"] = [[text_of(row) for row in cells] for cells in grid]
    return {k: v for k, v in figure.items() if k != KEY} | {"data": data}
