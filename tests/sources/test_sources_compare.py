"""Comparing two snapshots of one cluster: changed queues, appeared/left allocations."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rest_framework.test import APIClient
from sources_helpers import T0

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources.compare import compare_snapshots

pytestmark = pytest.mark.django_db


def scenario(now: float) -> dict[str, Any]:
    return {
        "now": now,
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {
            "name": "root",
            "children": [
                {
                    "name": "a",
                    "guaranteed": {"vcore": 2000},
                    "max": {"vcore": 8000},
                    "children": [{"name": "x"}, {"name": "y"}],
                },
                {"name": "b", "max": {"vcore": 4000}},
            ],
        },
        "nodes": [
            {"id": "n1", "capacity": {"vcore": 10000}},
            {"id": "n2", "capacity": {"vcore": 10000}},
        ],
        "allocations": [
            {
                "key": f"k{i}",
                "app": f"app-{i % 2}",
                "queue": "root.a.x" if i % 2 else "root.a.y",
                "node": "n1",
                "resources": {"vcore": 1000},
                "created": now - 100 + i,
            }
            for i in range(4)
        ],
    }


def store(doc: dict[str, Any], partition: str = "default") -> dm.ClusterSnapshot:
    return platform.import_snapshot(
        {"scenario.json": json.dumps(doc).encode()}, partition=partition, now=T0
    )


def two_snapshots() -> tuple[dm.ClusterSnapshot, dm.ClusterSnapshot]:
    before = scenario(T0.timestamp())
    after = copy.deepcopy(before)
    after["now"] = before["now"] + 60
    after["queues"]["children"][0]["max"] = {"vcore": 6000}  # root.a limit lowered
    allocs = after["allocations"]
    allocs[:] = [a for a in allocs if a["key"] != "k0"]  # k0 left (root.a.y)
    allocs.append(  # k9 appeared in root.b on n2
        {
            "key": "k9",
            "app": "app-9",
            "queue": "root.b",
            "node": "n2",
            "resources": {"vcore": 2000},
            "created": after["now"] - 5,
        }
    )
    next(a for a in allocs if a["key"] == "k3")["preempted"] = True
    return store(before), store(after)


def test_compare_finds_changed_queues_and_appeared_and_left_allocations() -> None:
    a, b = two_snapshots()

    result = compare_snapshots(a, b)

    changed = {q["path"]: q for q in result["queues"]["changed"]}
    assert set(changed) == {"root", "root.a", "root.a.x", "root.a.y", "root.b"}
    assert changed["root.a"]["limits_changed"] is True
    assert changed["root.a"]["changes"]["max"] == {
        "before": {"vcore": 8000},
        "after": {"vcore": 6000},
    }
    assert changed["root.b"]["limits_changed"] is False
    assert changed["root.b"]["usage_changed"] is True
    assert changed["root.b"]["usage_delta"] == {"vcore": 2000}
    # k0 left root.a.y; k3 (root.a.x) is now preempting: usage -1000 there
    assert changed["root.a.y"]["usage_delta"] == {"vcore": -1000}
    assert changed["root.a.x"]["changes"]["preempting"] == {
        "before": {},
        "after": {"vcore": 1000},
    }
    assert [x["key"] for x in result["allocations"]["appeared"]] == ["k9"]
    assert result["allocations"]["appeared"][0]["queue"] == "root.b"
    assert [x["key"] for x in result["allocations"]["left"]] == ["k0"]
    assert result["allocations"]["changed"] == [
        {"key": "k3", "changes": {"preempted": {"before": False, "after": True}}}
    ]
    assert result["nodes"]["changed"][0]["node_id"] == "n1"
    assert result["summary"]["allocations_appeared"] == 1
    assert result["summary"]["allocations_left"] == 1
    assert result["summary"]["queue_limits_changed"] == 1
    assert result["summary"]["identical"] is False


def test_a_snapshot_compared_with_an_equal_one_shows_nothing() -> None:
    doc = scenario(T0.timestamp())
    a, b = store(doc), store(doc)

    result = compare_snapshots(a, b)

    assert result["queues"] == {"added": [], "removed": [], "changed": []}
    assert result["allocations"] == {"appeared": [], "left": [], "changed": []}
    assert result["summary"]["identical"] is True


def test_added_and_removed_queues() -> None:
    before = scenario(T0.timestamp())
    after = copy.deepcopy(before)
    after["queues"]["children"].append({"name": "c"})
    after["queues"]["children"][0]["children"] = [{"name": "x"}, {"name": "y"}, {"name": "z"}]
    after["queues"]["children"] = [q for q in after["queues"]["children"] if q["name"] != "b"]

    result = compare_snapshots(store(before), store(after))

    assert result["queues"]["added"] == ["root.a.z", "root.c"]
    assert result["queues"]["removed"] == ["root.b"]


def test_compare_api(viewer_client: APIClient) -> None:
    a, b = two_snapshots()

    response = viewer_client.get(f"/api/snapshots/{a.pk}/compare/{b.pk}/")

    assert response.status_code == 200
    assert response.json() == json.loads(json.dumps(compare_snapshots(a, b)))
    assert response.json()["a"]["id"] == a.pk


def test_compare_api_refuses_two_clusters_and_unknown_ids(viewer_client: APIClient) -> None:
    a = store(scenario(T0.timestamp()))
    other = store(scenario(T0.timestamp()), partition="elsewhere")

    refused = viewer_client.get(f"/api/snapshots/{a.pk}/compare/{other.pk}/")
    missing = viewer_client.get(f"/api/snapshots/{a.pk}/compare/999999/")

    assert refused.status_code == 400
    assert "only snapshots of one cluster" in refused.json()["b"][0]
    assert missing.status_code == 404
    assert APIClient().get(f"/api/snapshots/{a.pk}/compare/{a.pk}/").status_code in (401, 403)
