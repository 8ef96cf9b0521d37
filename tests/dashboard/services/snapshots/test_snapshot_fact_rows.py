"""YuniKorn's figures and facts stored in the snapshot rows and given by the API.

On both clusters (the shared acme-ml REST answers and lab-west in data/cluster-b)
the stored queue, node and allocation rows and the snapshot API answers equal the
scheduler's REST answers exactly; a plain scenario JSON gets what it means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rest_answers import load, nonzero, rest_files, rest_folder, rest_queues
from rest_framework.test import APIClient

from dashboard import models, services

pytestmark = pytest.mark.django_db

CLUSTER_B = Path(__file__).parents[2] / "data" / "cluster-b" / "rest"


@pytest.fixture(params=["acme-ml", "lab-west"])
def imported(
    request: pytest.FixtureRequest, fixtures_dir: Path
) -> tuple[Path, models.ClusterSnapshot]:
    folder = rest_folder(request.param, fixtures_dir)
    return folder, services.import_snapshot(rest_files(folder, events=False))


def all_pages(client: APIClient, url: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    next_url: str | None = url
    while next_url:
        body = client.get(next_url).json()
        if isinstance(body, list):
            return body
        out.extend(body["results"])
        next_url = body.get("next")
    return out


def test_queue_rows_and_api_equal_the_rest_answers(
    imported: tuple[Path, models.ClusterSnapshot], viewer_client: APIClient
) -> None:
    folder, snap = imported
    reported = rest_queues(folder)
    rows = {q.path: q for q in snap.queues.all()}
    api = {q["path"]: q for q in all_pages(viewer_client, f"/api/snapshots/{snap.pk}/queues/")}
    assert set(rows) == set(reported) == set(api)
    for path, r in reported.items():
        row, answer = rows[path], api[path]
        allocated = nonzero(r.get("allocatedResource"))
        preempting = nonzero(r.get("preemptingResource"))
        remaining = {t: q - preempting.get(t, 0) for t, q in allocated.items()}
        max_apps = r.get("maxRunningApps") or None
        expected = (
            allocated,
            preempting,
            remaining,
            r["status"],
            max_apps,
            r.get("runningApps", 0),
        )
        assert expected == (
            row.allocated,
            row.preempting,
            row.remaining,
            row.status,
            row.max_applications,
            row.running_apps,
        ), path
        assert expected == (
            answer["allocated"],
            answer["preempting"],
            answer["remaining"],
            answer["status"],
            answer["max_applications"],
            answer["running_applications"],
        ), path
        assert row.usage == {t: q for t, q in remaining.items() if q}, path
        parts = path.split(".")
        managed = all(reported[".".join(parts[:i])]["isManaged"] for i in range(1, len(parts) + 1))
        assert row.dynamic is answer["dynamic"] is (not managed), path


def test_node_rows_and_api_equal_the_rest_answers(
    imported: tuple[Path, models.ClusterSnapshot], viewer_client: APIClient
) -> None:
    folder, snap = imported
    reported = {n["nodeID"]: n for n in load(folder, "partition_nodes.json")}
    rows = {n.node_id: n for n in services.snapshot_nodes(snap).all()}
    api = {n["node_id"]: n for n in all_pages(viewer_client, f"/api/snapshots/{snap.pk}/nodes/")}
    assert set(rows) == set(reported) == set(api)
    total: dict[str, int] = {}
    for node_id, r in reported.items():
        row, answer = rows[node_id], api[node_id]
        occupied = nonzero(r.get("occupied"))
        assert (r["capacity"], occupied) == (row.reported_capacity, row.occupied), node_id
        assert (r["capacity"], occupied) == (answer["reported_capacity"], answer["occupied"])
        assert sorted(p["key"] for p in answer["foreign_pods"]) == sorted(
            f["allocationKey"] for f in r.get("foreignAllocations", [])
        )
        assert answer["capacity"] == {t: q - occupied.get(t, 0) for t, q in r["capacity"].items()}
        for t, q in row.reported_capacity.items():
            total[t] = total.get(t, 0) + q
    (partition,) = load(folder, "partitions.json")
    assert total == partition["capacity"]["capacity"]
    assert snap.queues.get(path="root").allocated == partition["capacity"]["usedCapacity"]


def test_allocation_rows_flag_placeholders(
    imported: tuple[Path, models.ClusterSnapshot], viewer_client: APIClient
) -> None:
    folder, snap = imported
    reported = {
        a["allocationKey"]: a
        for n in load(folder, "partition_nodes.json")
        for a in n["allocations"]
    }
    api = {a["key"]: a for a in all_pages(viewer_client, f"/api/snapshots/{snap.pk}/allocations/")}
    assert set(api) == set(reported)
    for key, r in reported.items():
        expected = (
            r.get("placeholder", False),
            r.get("placeholderUsed", False),
            r.get("taskGroupName", ""),
        )
        row = services.snapshot_allocations(snap).get(key=key)
        assert expected == (row.placeholder, row.placeholder_used, row.task_group), key
        answer = api[key]
        assert expected == (answer["placeholder"], answer["placeholder_used"], answer["task_group"])


def test_lab_west_facts_in_rows() -> None:
    snap = services.import_snapshot(rest_files(CLUSTER_B, events=False))
    queues = {q.path: q for q in snap.queues.all()}
    sandbox = queues["root.sandbox"]
    # only usage being preempted: every type stays, with 0 remaining
    assert (
        sandbox.allocated
        == sandbox.preempting
        == {
            "memory": 8 * 2**30,
            "pods": 1,
            "vcore": 2000,
        }
    )
    assert sandbox.remaining == {"memory": 0, "pods": 0, "vcore": 0}
    assert sandbox.usage == {}
    assert queues["root.legacy"].status == "Draining"
    assert queues["root.tenants.team-x"].dynamic is True
    team_x, etl = queues["root.tenants.team-x"], queues["root.etl"]
    assert (team_x.max_applications, etl.max_applications) == (2, 3)
    assert queues["root.etl"].running_apps == 2
    assert queues["root"].running_apps == 7
    placeholders = services.snapshot_allocations(snap).filter(placeholder=True)
    assert {a.task_group for a in placeholders} == {"spark-executor"}
    assert placeholders.count() == 2
    nodes = {n.node_id: n for n in services.snapshot_nodes(snap).all()}
    assert nodes["node-b"].occupied == {"memory": 8 * 2**30, "pods": 1, "vcore": 2000}
    assert [p["pod"] for p in nodes["node-b"].foreign_pods] == ["monitoring/prometheus-k8s-0"]
    assert nodes["node-c"].occupied == {}


def test_plain_scenario_gets_the_defaults() -> None:
    scenario = {
        "now": 1000.0,
        "queues": {
            "name": "root",
            "children": [{"name": "a", "max": {"vcore": 4000}}],
        },
        "nodes": [{"id": "n1", "capacity": {"vcore": 8000, "memory": 100}}],
        "allocations": [
            {"key": "k1", "queue": "root.a", "node": "n1", "resources": {"vcore": 1000}},
            {
                "key": "k2",
                "queue": "root.a",
                "node": "n1",
                "resources": {"vcore": 500, "memory": 10},
                "preempted": True,
            },
        ],
    }
    snap = services.import_snapshot({"scenario.json": json.dumps(scenario).encode()})
    a = snap.queues.get(path="root.a")
    assert (a.allocated, a.preempting, a.usage) == (
        {"vcore": 1500, "memory": 10},
        {"vcore": 500, "memory": 10},
        {"vcore": 1000},
    )
    assert a.remaining == {"vcore": 1000, "memory": 0}
    assert (a.status, a.dynamic, a.max_applications, a.running_apps) == (
        "Active",
        False,
        None,
        None,
    )
    node = services.snapshot_nodes(snap).get()
    assert (node.reported_capacity, node.occupied, node.foreign_pods) == (
        {"vcore": 8000, "memory": 100},
        {},
        [],
    )
    assert not services.snapshot_allocations(snap).filter(placeholder=True).exists()
    assert set(services.snapshot_allocations(snap).values_list("task_group", flat=True)) == {""}
