"""Compact hover text: sent as distinct pieces, joined back to exactly the same text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from dashboard.charts.compact import KEY, compact_hover, expand_hover
from dashboard.charts.queues import queue_tree_figure
from dashboard.charts.values import FigureDict, QueueRow

EVIL = "<img src=x onerror=alert(1)>"


def test_tree_hover_round_trips_and_stays_escaped() -> None:
    rows = [
        QueueRow("root", used={"vcore": 3000}),
        QueueRow(f"root.{EVIL}", used={"vcore": 1000}, max={"vcore": 500}),
        QueueRow("root.b · <br>c", used={"vcore": 2000}, guaranteed={"vcore": 2000}),
    ]
    figure = queue_tree_figure(rows)
    compact = compact_hover(figure)
    assert "hovertext" not in compact["data"][0]  # type: ignore[index]
    assert expand_hover(compact) == figure
    # the pieces are cut from the escaped text: the raw name never appears in them
    parts = compact[KEY]["parts"]  # type: ignore[index]
    assert EVIL not in json.dumps(parts)
    assert "<b>root.&lt;img src=x onerror=alert(1)&gt;</b>" in parts
    # repeated words are sent once
    assert len(parts) == len(set(parts))
    assert parts.count("status Active") == 1


def test_figures_without_hover_lists_are_left_alone() -> None:
    figure: FigureDict = {"data": [{"type": "bar", "hovertext": "one text"}], "layout": {}}
    assert compact_hover(figure) == figure
    assert expand_hover(figure) == figure


#: hover texts made of the separators, their look-alikes and plain text
TEXTS = st.lists(st.sampled_from(["a", "<br>", " · ", "·", " ", "<", ""])).map("".join)


@given(st.lists(TEXTS, max_size=8))
def test_any_text_round_trips(texts: list[str]) -> None:
    figure: FigureDict = {
        "data": [{"type": "icicle", "hovertext": texts}, {"type": "bar"}],
        "layout": {},
    }
    assert expand_hover(compact_hover(figure)) == figure


def test_heatmap_grid_round_trips_and_stays_escaped() -> None:
    from dashboard.charts.nodes import node_heatmap_figure
    from dashboard.charts.values import NodeRow

    nodes = [
        NodeRow(id=f"node-{EVIL}", capacity={"vcore": 4000}, allocated={"vcore": 1000}),
        NodeRow(id="n2", capacity={"vcore": 4000, "memory": 2**30}, allocated={}),
    ]
    figure = node_heatmap_figure(nodes)
    compact = compact_hover(figure)
    assert all("hovertext" not in t for t in compact["data"])  # type: ignore[attr-defined]
    assert KEY in compact
    assert "grids" in compact[KEY]  # type: ignore[operator]
    assert expand_hover(compact) == figure
    assert EVIL not in json.dumps(compact[KEY]["parts"])  # type: ignore[index]


@given(st.lists(st.lists(TEXTS, min_size=1, max_size=4), min_size=1, max_size=4))
def test_any_grid_round_trips(grid: list[list[str]]) -> None:
    figure: FigureDict = {"data": [{"type": "heatmap", "hovertext": grid}], "layout": {}}
    assert expand_hover(compact_hover(figure)) == figure
