"""The snapshot importer lets go of what it has read: same import, less memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashboard.importers import parse_snapshot
from dashboard.importers.snapshot import reader
from dashboard.importers.snapshot.assemble import _drop_unread

REST = (
    Path(
        os.environ.get(
            "DASHBOARD_FIXTURES_DIR",
            Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "yunikorn",
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
            ],
        },
        {"applicationID": "b", "allocations": "not a list"},
        "not an object",
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
            ],
        },
        {"applicationID": "b", "allocations": "not a list"},
        "not an object",
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
