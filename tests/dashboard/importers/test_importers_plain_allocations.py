"""A node's allocations of the common form are read without the careful loop: the
import is the same (scenario, warnings, refusals and their messages) either way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples
from test_importers_snapshot import rest_files

from dashboard.importers import ImportFailure, parse_snapshot
from dashboard.importers.snapshot import nodes, reader
from dashboard.importers.snapshot.applications import _drop_unread
from engine.scenario import parse_cluster

NODES = "partition_nodes.json"
APPS = "partition_applications_active.json"


def _searched_again(items: object) -> set[int]:
    """:func:`_drop_unread` vouching for no application: each one's gang facts are
    searched for in its allocations."""
    _drop_unread(items)
    return set()


def parsed_both_ways(files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The import's result (or refusal's message) with the shortcuts, then without (each
    time checking its engine cluster against the engine's reading of its scenario):
    without them, every allocation goes through the careful loop and every
    application's allocations are searched for gang facts."""
    out: list[object] = []
    for plain in (True, False):
        monkeypatch.setattr(nodes, "_PLAIN_ALLOCATIONS", plain)
        monkeypatch.setattr(
            reader,
            "_drop_unread",
            _drop_unread if plain else lambda items: _drop_unread(items) and set(),
        )
        try:
            imp = parse_snapshot(files)
        except ImportFailure as exc:
            out.append(("refused", str(exc)))
        else:
            # the engine's allocations the importer built while reading are those the
            # engine builds of the scenario it wrote
            assert imp.cluster == parse_cluster(imp.scenario)
            out.append(
                (
                    json.dumps(imp.scenario, sort_keys=True),
                    imp.warnings,
                    imp.asks,
                    imp.applications,
                    json.dumps(imp.queue_usage, sort_keys=True),
                )
            )
    return out


def test_the_shared_answers_import_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture cluster (string priorities, originators, preempted pods, gangs)."""
    with_shortcut, careful = parsed_both_ways(rest_files(), monkeypatch)
    assert with_shortcut == careful


ODD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "priority": st.sampled_from(
        ["0", "-10", "+7", " 3", "2147483648", "x", "", None, 5, 1.5, True]
    ),
    "originator": st.sampled_from([True, False, None, "true", 1]),
    "preempted": st.sampled_from([True, False, None, 0]),
    "placeholder": st.sampled_from([True, False, None, "no"]),
    "placeholderUsed": st.sampled_from([True, None, 1]),
    "taskGroupName": st.sampled_from(["g", "", None, 3]),
    "requestTime": st.sampled_from([None, 0, 1_700_000_000_000_000_000, 1.5e18, 2**63, "1", True]),
    "nodeId": st.sampled_from(["", None, "elsewhere", 5]),
    "applicationId": st.sampled_from(["", None, "no-such-app", 7]),
    "allocationTags": st.sampled_from([None, {}, {"kubernetes.io/meta/podName": 1}, []]),
    "resource": st.sampled_from(
        [{}, None, {"vcore": 0}, {"vcore": -1}, {"vcore": 1.0}, {"vcore": 2**63}, {"": 1}, []]
    ),
    "allocationKey": st.sampled_from(["", None, 3, "dup"]),
}


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_odd_allocations_import_alike(data: st.DataObject) -> None:
    """Any field of some allocation given an odd or wrong value (or dropped): the same
    scenario or the same refusal, naming the same file and key."""
    files = rest_files()
    nodes: list[dict[str, Any]] = json.loads(files[NODES])
    apps: list[dict[str, Any]] = json.loads(files[APPS])
    placed = [(n, a) for n in nodes for a in n.get("allocations") or []]
    # the applications answer lists them again (read for its sums and its gangs)
    placed += [({}, a) for app in apps for a in app.get("allocations") or []]
    for _ in range(data.draw(st.integers(1, 3))):
        node, alloc = data.draw(st.sampled_from(placed))
        field = data.draw(st.sampled_from(sorted(ODD_VALUES)))
        if data.draw(st.booleans()):
            alloc.pop(field, None)
        else:
            value = data.draw(ODD_VALUES[field])
            if value == "dup":
                value = placed[0][1]["allocationKey"]
            elif field == "nodeId" and value == "elsewhere":
                value = nodes[-1]["nodeID"] if node is not nodes[-1] else nodes[0]["nodeID"]
            elif field == "applicationId" and value == "no-such-app" and not node:
                value = apps[-1]["applicationID"]
            alloc[field] = value
    files[NODES] = json.dumps(nodes).encode()
    files[APPS] = json.dumps(apps).encode()
    with pytest.MonkeyPatch.context() as monkeypatch:
        with_shortcut, careful = parsed_both_ways(files, monkeypatch)
    assert with_shortcut == careful


def test_gang_facts_of_the_applications_allocations_are_read() -> None:
    """An application whose allocations name a task group or a placeholder has them
    read (the others are not searched again: the test above compares both ways)."""
    files = rest_files()
    apps: list[dict[str, Any]] = json.loads(files[APPS])
    gang = next(app for app in apps if len(app.get("allocations") or []) >= 2)
    first, second = gang["allocations"][:2]
    first["taskGroupName"] = "driver"
    first["placeholder"] = True
    second["taskGroupName"] = "executor"
    files[APPS] = json.dumps(apps).encode()
    imported = {a["id"]: a for a in parse_snapshot(files).applications}
    got = imported[gang["applicationID"]]
    assert got["task_groups"] == {
        first["allocationKey"]: "driver",
        second["allocationKey"]: "executor",
    }
    assert got["placeholder_keys"] == [first["allocationKey"]]
    others = [a for k, a in imported.items() if k != gang["applicationID"]]
    assert others
    assert not any("task_groups" in a or "placeholder_keys" in a for a in others)
