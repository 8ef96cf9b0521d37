"""The snapshot importer lets go of what it has read: same import, less memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from dashboard.importers import parse_snapshot
from dashboard.importers.snapshot import reader
from dashboard.importers.snapshot.applications import _drop_unread, _usual_entry

REST = (
    Path(
        os.environ.get(
            "DASHBOARD_FIXTURES_DIR",
            Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "yunikorn",
        )
    )
    / "rest"
)


def test_application_allocations_keep_only_what_is_read() -> None:
    """Tags and times go; key, node, resource and gang fields stay; odd entries are left
    for the import to name."""
    apps: list[object] = [
        {
            "applicationID": "a",
            "allocations": [
                {
                    "allocationKey": "k",
                    "nodeId": "n",
                    "resource": {"vcore": 1},
                    "taskGroupName": "g",
                    "placeholder": True,
                    "allocationTags": {"x": "y"},
                    "requestTime": 1,
                },
                "not an object",
                {"allocationKey": "k2", "nodeId": "n", "resource": {"vcore": 1}, "x": 1},
            ],
        },
        {"applicationID": "b", "allocations": "not a list"},
        "not an object",
        {
            "applicationID": "c",
            "allocations": [
                {"allocationKey": "k3", "nodeId": "n", "resource": {"vcore": 1}, "x": 1},
                {"allocationKey": "k4", "resource": {"vcore": 2}},
            ],
        },
    ]
    _drop_unread(apps)
    assert apps == [
        {
            "applicationID": "a",
            "allocations": [
                {
                    "allocationKey": "k",
                    "nodeId": "n",
                    "resource": {"vcore": 1},
                    "taskGroupName": "g",
                    "placeholder": True,
                },
                "not an object",
                # an application with gang facts keeps objects only
                {"allocationKey": "k2", "nodeId": "n", "resource": {"vcore": 1}},
            ],
        },
        {"applicationID": "b", "allocations": "not a list"},
        "not an object",
        {
            "applicationID": "c",
            "allocations": [
                # the usual entry of an application without gang facts: a tuple
                ("k3", "n", {"vcore": 1}),
                {"allocationKey": "k4", "resource": {"vcore": 2}},
            ],
        },
    ]


def test_import_is_the_same_with_the_unread_fields_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the answers gives the same snapshot, warnings included, whether or not
    the applications' allocations are trimmed to what is read."""
    files = {p.name: p.read_bytes() for p in sorted(REST.glob("partition*.json"))}
    trimmed = parse_snapshot(files)
    monkeypatch.setattr(reader, "_drop_unread", lambda items: None)
    full = parse_snapshot(files)
    assert (full.scenario, full.asks, full.applications, full.warnings) == (
        trimmed.scenario,
        trimmed.asks,
        trimmed.applications,
        trimmed.warnings,
    )


FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.sampled_from(["n1", "k", ""]),
    st.dictionaries(st.sampled_from(["vcore", "pods"]), st.integers(0, 3) | st.floats(0, 3)),
)
ALLOCATION_FIELDS = ["allocationKey", "nodeId", "resource", "taskGroupName", "placeholder", "x"]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.lists(
            st.dictionaries(st.sampled_from(ALLOCATION_FIELDS), FIELD_VALUES) | st.integers(),
            max_size=4,
        ),
        max_size=4,
    )
)
def test_trimmed_entries_are_the_read_fields_in_order(listed: list[list[object]]) -> None:
    """Each entry keeps the read fields (in their order, values equal and of the same
    types); an application is vouched gang-free when all its entries are objects
    without a task group or placeholder field. In such an application an entry with a
    key, a node and a resource is kept as the tuple of the three; an application with
    gang facts keeps objects only."""
    apps = [{"applicationID": f"a{i}", "allocations": list(a)} for i, a in enumerate(listed)]
    gangless = _drop_unread(apps)
    for app, entries in zip(apps, listed, strict=True):
        for kept, entry in zip(app["allocations"], entries, strict=True):
            if type(entry) is not dict:
                assert kept is entry
                continue
            want = [(f, entry[f]) for f in ALLOCATION_FIELDS[:5] if f in entry]
            usual = [f for f, _ in want] == ["allocationKey", "nodeId", "resource"]
            if usual and id(app) in gangless:
                assert type(kept) is tuple
                kept = _usual_entry(kept)
            assert type(kept) is dict
            assert list(kept.items()) == want
            assert [type(v) for v in kept.values()] == [type(v) for _, v in want]
            for (_, got), (_, was) in zip(kept.items(), want, strict=True):
                if type(was) is dict:
                    assert [type(q) for q in got.values()] == [type(q) for q in was.values()]
        vouched = all(
            type(e) is dict and "taskGroupName" not in e and "placeholder" not in e for e in entries
        )
        assert (id(app) in gangless) == vouched
