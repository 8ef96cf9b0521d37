"""The plan's figures: valid Plotly, outcome in words beside the colour, names as text."""

from __future__ import annotations

import dataclasses

import plotly.graph_objects as go
from test_planning import CHAIN_CURRENT, _cluster, _proposed, plan_fixture

from dashboard.charts import plans as plan_charts
from dashboard.importers.config import parse_config
from dashboard.planning import in_force_from_spec, plan_config
from engine.model import Allocation, QueueConfig

EVIL = "<img src=x onerror=alert(1)>"


def test_figures_are_valid_plotly_and_say_the_outcome_in_words() -> None:
    plan = plan_fixture("queues-nested-gpu.yaml", "queues-nested-gpu-proposed.yaml")
    tree = plan_charts.plan_tree_figure(plan)
    timeline = plan_charts.plan_timeline_figure(plan)
    go.Figure(tree)  # raises ValueError on any property Plotly does not know
    go.Figure(timeline)
    trace = tree["data"][0]  # type: ignore[index]
    labels = dict(zip(trace["ids"], trace["labels"], strict=True))
    colours = dict(zip(trace["ids"], trace["marker"]["colors"], strict=True))
    assert "fires #1, preempts 1 allocation" in labels["root.batch"]
    # the scheduler's walk: research (#2) before nlp (#3), held a second behind it
    assert "fires #2, preempts 1 allocation" in labels["root.research"]
    assert "fires #3, nothing to take" in labels["root.research.nlp"]
    assert "unchanged" in labels["root.production"]
    assert colours["root.batch"] == plan_charts.OUTCOMES["preempts"].colour
    assert colours["root.research.nlp"] == plan_charts.OUTCOMES["fires_nothing"].colour
    texts = sorted(t for series in timeline["data"] for t in series["text"])  # type: ignore[attr-defined]
    assert texts == ["#1", "#2", "#3"]


def test_a_leaf_losing_to_its_parent_is_marked() -> None:
    # root.p gets a max it had not: rule set seed starts its timer (scheduler: none)
    plan = plan_config(
        _proposed(6),
        in_force=in_force_from_spec(parse_config(CHAIN_CURRENT).partition()),
        cluster=_cluster(),
        now=1000.0,
        rules="seed",
    )
    outcomes = plan_charts.queue_outcomes(plan)
    assert outcomes["root.p"][0] == "preempts"
    assert outcomes["root.p.a"] == ("loses", "loses 3 allocations")
    assert outcomes["root.p.b"] == ("loses", "loses 3 allocations")


def test_queue_names_are_text_in_labels_and_hover() -> None:
    """A dynamic queue named with markup (only the snapshot knows it) is escaped."""
    cluster = _cluster()
    root = dataclasses.replace(cluster.root, children=(*cluster.root.children, QueueConfig(EVIL)))
    evil_alloc = Allocation("e1", f"root.{EVIL}", "n1", {"vcore": 1000})
    cluster = dataclasses.replace(
        cluster, root=root, allocations=(*cluster.allocations, evil_alloc)
    )
    plan = plan_config(
        _proposed(6),
        in_force=in_force_from_spec(parse_config(CHAIN_CURRENT).partition()),
        cluster=cluster,
        now=1000.0,
    )
    trace = plan_charts.plan_tree_figure(plan)["data"][0]  # type: ignore[index]
    i = trace["ids"].index(f"root.{EVIL}")
    assert "<img" not in trace["labels"][i]
    assert "&lt;img src=x onerror=alert(1)&gt;" in trace["labels"][i]
    assert "<img" not in trace["hovertext"][i]
