"""dashboard.charts: queue states, human units, escaping and the figure dicts."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta

import plotly.graph_objects as go
import pytest

from dashboard import display
from dashboard.charts.nodes import node_heatmap_figure
from dashboard.charts.queues import (
    levels_shown,
    outline_tree,
    queue_bars_figure,
    queue_state,
    queue_tree_figure,
    usage_over_time_figure,
)
from dashboard.charts.runs import history_timeline_figure, quota_plan_figure
from dashboard.charts.style import FENCE_COLOUR, STATES, VICTIM_COLOUR
from dashboard.charts.values import NodeRow, QueueRow, RunRow, UsagePoint, resource_types

GIB = 2**30
EVIL = "<img src=x onerror=alert(1)>"


def _trace(fig: dict[str, object], index: int = 0) -> dict[str, object]:
    data = fig["data"]
    assert isinstance(data, list)
    trace = data[index]
    assert isinstance(trace, dict)
    return trace


def _tree() -> list[QueueRow]:
    return [
        QueueRow("root", max={"vcore": 20000, "memory": 64 * GIB}, used={"vcore": 15000}),
        QueueRow("root.a", guaranteed={"vcore": 5000}, used={"vcore": 4000}),
        QueueRow("root.b", guaranteed={"vcore": 5000}, used={"vcore": 6000}),
        QueueRow("root.c", max={"vcore": 5000}, used={"vcore": 5000}),
        QueueRow("root.c.d", used={"vcore": 5000}),
    ]


@pytest.mark.parametrize(
    ("row", "rtype", "expected"),
    [
        (QueueRow("root.a", guaranteed={"vcore": 5000}, used={"vcore": 5000}), None, "within"),
        (QueueRow("root.a", guaranteed={"vcore": 5000}, used={}), None, "within"),
        (QueueRow("root.a", guaranteed={"vcore": 5000}, used={"vcore": 5001}), None, "above"),
        # an undefined guaranteed type is fully preemptable: any use is above it
        (QueueRow("root.a", guaranteed={"vcore": 5000}, used={"memory": 1}), None, "above"),
        (QueueRow("root.a", used={"vcore": 1}), None, "above"),
        (QueueRow("root.a", max={"vcore": 5000}, used={"vcore": 5000}), None, "at_max"),
        (QueueRow("root.a", max={"vcore": 5000}, used={"vcore": 6000}), None, "over_max"),
        (
            QueueRow("root.a", max={"vcore": 9000}, used={"vcore": 6000}, lowered_max={"vcore": 1}),
            None,
            "over_max",
        ),
        # a max of 0 GPUs with no GPU in use is not "at max"
        (
            QueueRow("root.a", max={"gpu": 0}, used={"vcore": 1}, guaranteed={"vcore": 1}),
            None,
            "within",
        ),
        # per type: vcore is at max, memory only above guaranteed
        (
            QueueRow("root.a", max={"vcore": 5}, used={"vcore": 5, "memory": 9}),
            "memory",
            "above",
        ),
        (
            QueueRow("root.a", max={"vcore": 5}, used={"vcore": 5, "memory": 9}),
            "vcore",
            "at_max",
        ),
    ],
)
def test_queue_state(row: QueueRow, rtype: str | None, expected: str) -> None:
    """The state is the worst over the types looked at, in the order within < above < at < over."""
    assert expected == queue_state(row, rtype)


@pytest.mark.parametrize(
    ("rtype", "quantity", "expected"),
    [
        ("vcore", 2500, "2.5 cores"),
        ("vcore", 1000, "1 core"),
        ("vcore", 0, "0 cores"),
        ("vcore", 64000, "64 cores"),
        ("memory", 8 * GIB, "8 GiB"),
        ("memory", 96 * GIB, "96 GiB"),
        ("memory", 512 * 2**20, "512 MiB"),
        ("memory", 8_000_000_000, "7.451 GiB (8,000,000,000 B)"),
        ("memory", 2 * 2**40, "2 TiB"),
        ("ephemeral-storage", 10 * GIB, "10 GiB"),
        ("pods", 110, "110"),
        ("nvidia.com/gpu", 0, "0"),
        ("nvidia.com/gpu", None, "not defined"),
    ],
)
def test_format_quantity(rtype: str, quantity: int | None, expected: str) -> None:
    """Quantities read in cores and binary bytes, exactly; None reads "not defined"."""
    assert expected == display.format_quantity(rtype, quantity)


def test_tree_figure_shape_and_colours() -> None:
    """One icicle box per queue, parents from the paths, colour from the state."""
    fig = queue_tree_figure(_tree())
    trace = _trace(fig)
    assert trace["type"] == "icicle"
    assert trace["ids"] == ["root", "root.a", "root.b", "root.c", "root.c.d"]
    assert trace["parents"] == ["", "root", "root", "root", "root.c"]
    colours = trace["marker"]["colors"]  # type: ignore[index]
    within, above, at_max = (STATES[s][1] for s in ("within", "above", "at_max"))
    assert [above, within, above, at_max, above] == colours


def test_tree_figure_type_selector_changes_colours() -> None:
    """Selecting a resource type colours by that type alone."""
    rows = [QueueRow("root", max={"vcore": 5}, used={"vcore": 5, "memory": 1})]
    by_vcore = _trace(queue_tree_figure(rows, "vcore"))["marker"]["colors"]  # type: ignore[index]
    by_memory = _trace(queue_tree_figure(rows, "memory"))["marker"]["colors"]  # type: ignore[index]
    assert [STATES["at_max"][1]] == by_vcore
    assert [STATES["above"][1]] == by_memory


def test_tree_hover_has_exact_values_and_not_defined() -> None:
    """Hover text gives every measure in human units; undefined max says unlimited."""
    rows = [
        QueueRow(
            "root.a",
            guaranteed={"vcore": 2000, "memory": 4 * GIB},
            used={"vcore": 2500, "memory": 6 * GIB},
            preemptable={"vcore": 500, "memory": 2 * GIB},
        )
    ]
    hover = _trace(queue_tree_figure(rows))["hovertext"][0]  # type: ignore[index]
    # no figures reported (a plan's tree): the engine's usage, named remaining
    assert "vcore: remaining 2.5 cores · guaranteed 2 cores · max not defined (unlimited)" in hover
    assert "preemptable 0.5 cores" in hover
    assert "memory: remaining 6 GiB · guaranteed 4 GiB" in hover
    assert "status Active" in hover
    assert "state: above guaranteed" in hover


def test_tree_escapes_queue_names_in_labels_and_hover() -> None:
    """A queue name with HTML reaches Plotly only escaped, in labels and hover text."""
    rows = [QueueRow("root"), QueueRow(f"root.{EVIL}", used={"vcore": 1})]
    trace = _trace(queue_tree_figure(rows))
    # after the state mark (above guaranteed: none is defined)
    assert trace["labels"][1] == "▲ &lt;img src=x onerror=alert(1)&gt;"  # type: ignore[index]
    hover = trace["hovertext"][1]  # type: ignore[index]
    assert "<b>root.&lt;img src=x onerror=alert(1)&gt;</b>" in hover
    assert EVIL not in json.dumps([trace["labels"], trace["hovertext"]])
    # ids stay raw: they are keys, never drawn, and the search box matches them
    assert f"root.{EVIL}" == trace["ids"][1]  # type: ignore[index]


def test_tree_highlights_fence_and_victim_queues() -> None:
    """The fence and its subtree are outlined in blue, victim queues in crimson."""
    fig = queue_tree_figure(_tree(), fence="root.c", victim_queues=["root.b"])
    line = _trace(fig)["marker"]["line"]  # type: ignore[index]
    assert line["color"] == [
        "rgba(255,255,255,0.8)",
        "rgba(255,255,255,0.8)",
        VICTIM_COLOUR,
        FENCE_COLOUR,
        FENCE_COLOUR,
    ]
    assert line["width"] == [1, 1, 4, 4, 2]


def test_tree_with_levels_cut_leads_down_to_deep_victims() -> None:
    """With levels cut, the queues above a victims' queue carry a thin crimson trail.

    The fence keeps its own thick outline; without a cut (all levels shown) no trail
    is drawn, as the test above shows.
    """
    fig = queue_tree_figure(_tree(), fence="root.c", victim_queues=["root.c.d"], maxdepth=2)
    line = _trace(fig)["marker"]["line"]  # type: ignore[index]
    assert line["color"] == [
        VICTIM_COLOUR,
        "rgba(255,255,255,0.8)",
        "rgba(255,255,255,0.8)",
        FENCE_COLOUR,
        VICTIM_COLOUR,
    ]
    assert line["width"] == [2, 1, 1, 4, 4]
    # outlining a kept figure again (a run's answer) follows its levels the same way
    again = outline_tree(queue_tree_figure(_tree(), maxdepth=2), victim_queues=["root.c.d"])
    line = _trace(again)["marker"]["line"]  # type: ignore[index]
    assert line["width"] == [2, 1, 1, 2, 4]
    assert line["color"][3] == VICTIM_COLOUR
    whole = outline_tree(queue_tree_figure(_tree()), victim_queues=["root.c.d"])
    assert _trace(whole)["marker"]["line"]["width"] == [1, 1, 1, 1, 4]  # type: ignore[index]


def test_levels_shown_at_once() -> None:
    """Every level up to 60 queues; past that, three levels, the deeper ones on a click."""
    assert levels_shown(1) == -1
    assert levels_shown(60) == -1
    assert levels_shown(61) == 3
    assert levels_shown(3000) == 3


def test_tree_level_only_for_known_queue() -> None:
    """A deep link to a queue zooms into it; an unknown path is ignored."""
    assert _trace(queue_tree_figure(_tree(), level="root.c"))["level"] == "root.c"
    assert "level" not in _trace(queue_tree_figure(_tree(), level="root.nope"))
    # a leaf is shown inside its parent
    assert _trace(queue_tree_figure(_tree(), level="root.c.d"))["level"] == "root.c"
    assert _trace(queue_tree_figure(_tree(), level="root.a"))["level"] == "root"


def test_bars_undefined_differs_from_zero() -> None:
    """A zero guarantee is a defined bar labelled 0; an undefined max is a hatched ghost."""
    row = QueueRow(
        "root.a",
        guaranteed={"vcore": 0},
        max=None,
        used={"vcore": 3000},
        preemptable={"vcore": 3000},
    )
    fig = queue_bars_figure(row, ["vcore"])
    defined, ghost = _trace(fig, 0), _trace(fig, 1)
    assert defined["y"] == ["guaranteed", "allocated", "remaining", "preemptable"]
    assert defined["x"] == [0.0, 3.0, 3.0, 3.0]
    assert defined["text"] == ["0 cores", "3 cores", "3 cores", "3 cores"]
    assert ghost["y"] == ["max"]
    assert ghost["text"] == ["not defined"]
    assert ghost["marker"]["pattern"]["shape"] == "/"  # type: ignore[index]
    assert ghost["hovertext"] == ["max: not defined (unlimited)"]


def test_bars_one_panel_per_type_in_units() -> None:
    """Every resource type gets its own panel, values in that type's unit."""
    row = QueueRow(
        "root.a",
        guaranteed={"vcore": 2000, "memory": 8 * GIB, "nvidia.com/gpu": 1},
        max={"vcore": 4000, "memory": 16 * GIB, "nvidia.com/gpu": 2},
        used={"vcore": 1000, "memory": 4 * GIB},
    )
    fig = queue_bars_figure(row)
    annotations = [a["text"] for a in fig["layout"]["annotations"]]  # type: ignore[index]
    assert annotations == ["vcore (cores)", "memory (GiB)", "nvidia.com/gpu (count)"]
    assert _trace(fig, 0)["x"] == [2.0, 1.0, 1.0, 4.0]
    assert _trace(fig, 2)["x"] == [8.0, 4.0, 4.0, 16.0]
    # GPUs: allocated and remaining are 0 (defined: always known), no preemptable
    assert _trace(fig, 4)["x"] == [1.0, 0.0, 0.0, 2.0]
    assert _trace(fig, 5)["y"] == ["preemptable"]


def test_node_heatmap_utilisation_and_highlight() -> None:
    """Cells are allocated / capacity in percent; highlighted nodes get an outlined column."""
    nodes = [
        NodeRow("n2", {"vcore": 4000}, {"vcore": 1000}),
        NodeRow("n1", {"vcore": 2000, "memory": 4 * GIB}, {"vcore": 2000, "memory": GIB}),
    ]
    fig = node_heatmap_figure(nodes, highlight=["n2"])
    heat = _trace(fig)
    assert heat["x"] == ["n1", "n2"]
    assert heat["y"] == ["vcore", "memory"]
    assert heat["z"] == [[100.0, 25.0], [25.0, None]]
    assert "allocated 1 GiB of 4 GiB for YuniKorn (25.0%)" in heat["hovertext"][1][0]  # type: ignore[index]
    assert "memory: no capacity" in heat["hovertext"][1][1]  # type: ignore[index]
    # n2 is the second column (index 1): outlined, with a label above it
    shapes = fig["layout"]["shapes"]  # type: ignore[index]
    assert [(sh["x0"], sh["x1"]) for sh in shapes] == [(0.5, 1.5)]
    assert shapes[0]["line"]["color"] == VICTIM_COLOUR
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["▼ victims"]  # type: ignore[index]


def test_node_heatmap_escapes_node_ids() -> None:
    """Node ids are user text too: ticks and hover are escaped."""
    fig = node_heatmap_figure([NodeRow(EVIL, {"vcore": 1})], highlight=[EVIL])
    assert EVIL not in json.dumps(fig["data"])


def test_history_timeline_groups_by_outcome() -> None:
    """One trace per outcome, run ids in customdata, escaped queue names."""
    t0 = datetime(2026, 9, 1, 9, 59, 30, tzinfo=UTC)
    runs = [
        RunRow(1, t0, "root.batch", "quota_change", "enforced", 2, t0 + timedelta(seconds=1)),
        RunRow(2, t0 + timedelta(minutes=1), f"root.{EVIL}", "what_if", "does_not_help", 0),
        RunRow(3, t0 + timedelta(minutes=2), "root.batch", "round", "enforced", 1),
    ]
    fig = history_timeline_figure(runs)
    names = [_trace(fig, i)["name"] for i in range(2)]
    assert names == ["would not help", "target claimed in full"]
    assert _trace(fig, 1)["customdata"] == [1, 3]
    assert EVIL not in json.dumps(fig["data"])
    assert "took 1.00 s" in _trace(fig, 1)["hovertext"][0]  # type: ignore[index]


def test_history_timeline_legend_keeps_what_if_predicted_and_observed_apart() -> None:
    """The legend names each run's nature and says no engine outcome as if it happened:
    a predicted or what-if "enforced" is "target claimed in full", and the three natures
    have three marker shapes."""
    t0 = datetime(2026, 9, 1, 9, 59, 30, tzinfo=UTC)
    runs = [
        RunRow(1, t0, "root.batch", "timer", "enforced", 2, nature="predicted"),
        RunRow(2, t0, "root.batch", "manual", "enforced", 2, nature="what-if"),
        RunRow(3, t0, "root.batch", "observed", "preempted", 2, nature="observed"),
    ]
    fig = history_timeline_figure(runs)
    traces = [_trace(fig, i) for i in range(3)]
    assert [t["name"] for t in traces] == [
        "observed: preempted",
        "predicted: target claimed in full",
        "what-if: target claimed in full",
    ]
    symbols = [t["marker"]["symbol"] for t in traces]  # type: ignore[index]
    assert symbols == ["square", "circle", "diamond"]
    assert "enforced" not in json.dumps(fig)


def test_usage_over_time_keeps_gaps_for_undefined() -> None:
    """An undefined max over time is a gap (None), never a line at 0."""
    t0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
    points = [
        UsagePoint(t0, {"vcore": 1000}, None, {"vcore": 14000}),
        UsagePoint(t0 + timedelta(hours=1), {"vcore": 3000}, None, None),
    ]
    fig = usage_over_time_figure(points, ["vcore"])
    allocated, used, guaranteed, maximum = (_trace(fig, i) for i in range(4))
    assert (allocated["name"], used["name"]) == ("allocated", "remaining")
    assert allocated["y"] == used["y"] == [1.0, 3.0]  # no allocated reported: the usage
    assert guaranteed["y"] == [None, None]
    assert maximum["y"] == [14.0, None]


def test_quota_plan_figure_target_and_claimed() -> None:
    """Per leaf: share against claimed; the queue's total last."""
    answer = {
        "status": "enforced",
        "queue": "root.research",
        "preemptable": {"vcore": 2000},
        "claimed": {"vcore": 2000},
        "leaves": {
            "root.research.nlp": {
                "preemptable": {"vcore": 2000},
                "claimed": {"vcore": 2000},
                "victims": ["a"],
            }
        },
        "victims": ["a"],
        "alerts": [],
    }
    fig = quota_plan_figure(answer)
    share, claimed = _trace(fig, 0), _trace(fig, 1)
    assert share["y"] == ["root.research.nlp", "<b>root.research</b>"]
    assert share["x"] == [2.0, 2.0]
    assert claimed["x"] == [2.0, 2.0]


def test_figures_are_valid_plotly_figures() -> None:
    """Every figure is plain JSON (what json_script embeds) that Plotly's schema accepts.

    The figures are built as dicts for speed; ``go.Figure`` validates each
    property against the schema of the pinned plotly and raises on any mistake.
    """
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    figures = [
        queue_tree_figure(_tree()),
        queue_bars_figure(_tree()[0]),
        node_heatmap_figure([NodeRow("n", {"vcore": 1})]),
        history_timeline_figure([RunRow(1, t0, "root", "round", "fits")]),
        usage_over_time_figure([UsagePoint(t0, {})], ["vcore"]),
        quota_plan_figure({"queue": "root.a"}),
    ]
    figures += [
        queue_tree_figure(_tree(), "vcore", fence="root.c", victim_queues=["root.b"]),
        queue_bars_figure(
            QueueRow("root.a", guaranteed={"vcore": 0}, used={"memory": GIB}), ["vcore", "memory"]
        ),
        node_heatmap_figure([NodeRow("n", {"vcore": 1}), NodeRow("m", {})], highlight=["n"]),
        usage_over_time_figure(
            [UsagePoint(t0, {"vcore": 1}, None, {"vcore": 2})], ["vcore", "memory"]
        ),
        quota_plan_figure(
            {
                "queue": "root.a",
                "preemptable": {"vcore": 2000, "memory": GIB},
                "claimed": {"vcore": 1000},
                "leaves": {
                    "root.a.x": {"preemptable": {"vcore": 1000}, "claimed": {"vcore": 1000}},
                    "root.a.y": {"preemptable": {"vcore": 1000, "memory": GIB}, "claimed": {}},
                },
            }
        ),
    ]
    for fig in figures:
        assert {"data", "layout"} <= set(json.loads(json.dumps(fig)))
        go.Figure(fig)  # raises ValueError on any property Plotly does not know


def test_subplots_are_stacked_without_overlap() -> None:
    """One panel per type, top to bottom, each with its own axes and title."""
    fig = queue_bars_figure(QueueRow("root"), ["vcore", "memory", "pods"])
    layout = fig["layout"]
    assert isinstance(layout, dict)
    domains = [layout[k]["domain"] for k in ("yaxis", "yaxis2", "yaxis3")]
    assert domains[0][1] == 1.0
    assert all(upper[0] > lower[1] for upper, lower in itertools.pairwise(domains))
    refs = {(t["xaxis"], t["yaxis"]) for t in fig["data"]}  # type: ignore[attr-defined]
    assert refs == {("x", "y"), ("x2", "y2"), ("x3", "y3")}


def test_quota_plan_single_leaf_has_no_total_row() -> None:
    """When the changed queue is itself the only leaf, it is listed once."""
    answer = {
        "queue": "root.batch",
        "preemptable": {"vcore": 2000},
        "claimed": {"vcore": 2000},
        "leaves": {"root.batch": {"preemptable": {"vcore": 2000}, "claimed": {"vcore": 2000}}},
    }
    assert _trace(quota_plan_figure(answer))["y"] == ["root.batch"]


def test_short_time_spans_are_padded() -> None:
    """Runs a second apart still get a readable axis of at least ten minutes."""
    t0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
    runs = [
        RunRow(1, t0, "root", "round", "fits"),
        RunRow(2, t0 + timedelta(seconds=1), "root", "round", "fits"),
    ]
    low, high = history_timeline_figure(runs)["layout"]["xaxis"]["range"]  # type: ignore[index]
    assert datetime.fromisoformat(high) - datetime.fromisoformat(low) == timedelta(minutes=10)


def test_tree_escapes_names_beside_status_and_dynamic() -> None:
    """A draining, dynamic queue with an HTML name: label and hover name both, escaped."""
    row = QueueRow(
        f"root.{EVIL}",
        used={"vcore": 1},
        status="Draining",
        dynamic=True,
        max_applications=2,
        running_apps=1,
    )
    trace = _trace(queue_tree_figure([QueueRow("root"), row]))
    assert trace["labels"][1] == "▲ &lt;img src=x onerror=alert(1)&gt; (Draining, dynamic)"  # type: ignore[index]
    hover = trace["hovertext"][1]  # type: ignore[index]
    assert "status Draining · dynamic (from a child template)" in hover
    assert "running applications 1 of max 2" in hover
    assert EVIL not in json.dumps([trace["labels"], trace["hovertext"]])


def test_queue_held_only_by_preempting_keeps_its_types() -> None:
    """Allocated = preempting: every type is listed and drawn, with 0 remaining."""
    row = QueueRow(
        "root.sandbox",
        used={},
        preempting={"vcore": 2000, "pods": 1},
        allocated={"vcore": 2000, "pods": 1},
    )
    assert resource_types([row]) == ["vcore", "pods"]
    assert row.remaining == {"vcore": 0, "pods": 0}
    fig = queue_bars_figure(row)
    assert _trace(fig, 0)["y"] == ["allocated", "preempting", "remaining"]
    assert _trace(fig, 0)["text"] == ["2 cores", "2 cores", "0 cores"]
    assert _trace(fig, 2)["text"] == ["1", "1", "0"]
