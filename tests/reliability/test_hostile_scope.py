"""Hostile input, third round, across clusters and in exports: every object a request
names belongs to the request's cluster and partition, and every CSV cell a user's text
reaches is defused against spreadsheet formulas (the partition name included)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from reliability_support import QUEUES_YAML, db_counts, scenario
from rest_framework.test import APIClient

from dashboard import models, services


def _client(user: Any) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(user)
    return client


@pytest.fixture
def two(staff: Any) -> dict[str, models.ClusterSnapshot]:
    """The small scenario and its config in two clusters, east and west."""
    out = {}
    for name in ("east", "west"):
        services.import_config(QUEUES_YAML.encode(), filename="q.yaml", user=staff, cluster=name)
        out[name] = services.import_snapshot(
            {"scenario.json": json.dumps(scenario()).encode()}, user=staff, cluster=name
        )
    return out


def test_a_quota_change_naming_another_clusters_snapshot_is_refused(
    two: dict[str, models.ClusterSnapshot], staff: Any
) -> None:
    client = _client(staff)
    before = db_counts()
    body = {
        "cluster": "east",
        "partition": "default",
        "queue_path": "root.a",
        "new_max": {"vcore": 4000},
        "snapshot": two["west"].pk,
    }
    response = client.post("/api/quota-changes/", body, format="json")
    print(f"[answer] {response.status_code} {response.content[:300]!r}")
    assert response.status_code == 400, response.content[:500]
    assert "snapshot" in response.json()
    assert db_counts() == before
    body["snapshot"] = two["east"].pk
    assert client.post("/api/quota-changes/", body, format="json").status_code == 201


def test_the_service_refuses_another_partitions_snapshot(
    two: dict[str, models.ClusterSnapshot],
) -> None:
    with pytest.raises(services.ServiceError) as info:
        services.schedule_quota_change(
            two["east"].partition, "root.a", new_max={"vcore": 4000}, snapshot=two["west"]
        )
    assert info.value.field == "snapshot"


def test_a_config_diff_with_another_clusters_version_is_refused(
    two: dict[str, models.ClusterSnapshot], staff: Any
) -> None:
    east = models.ConfigVersion.objects.get(partition=two["east"].partition)
    west = models.ConfigVersion.objects.get(partition=two["west"].partition)
    response = _client(staff).get(f"/api/configs/{east.pk}/diff/", {"other": west.pk})
    assert response.status_code == 400, response.content[:500]
    assert "other" in response.json()


def test_snapshot_compare_across_clusters_is_refused(
    two: dict[str, models.ClusterSnapshot], staff: Any
) -> None:
    east, west = two["east"].pk, two["west"].pk
    response = _client(staff).get(f"/api/snapshots/{east}/compare/{west}/")
    assert response.status_code in (400, 404), response.content[:300]


# --------------------------------------------------------------------------- CSV


FORMULA = '=HYPERLINK("http://evil.example/","x")'


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_every_csv_cell_is_defused_including_the_partition_name(
    staff: Any, staff_browser: Client
) -> None:
    """A partition whose name is a formula (a name by the rule: no white space), a run over
    it: no cell of the runs CSV (API) or /history.csv (page) starts with a formula
    character."""
    services.import_config(
        QUEUES_YAML.replace("name: default", f"name: '{FORMULA}'").encode(),
        filename="q.yaml",
        user=staff,
    )
    snap = services.import_snapshot(
        {"scenario.json": json.dumps(scenario()).encode()},
        user=staff,
        partition=FORMULA,
    )
    client = _client(staff)
    run = client.post(
        "/api/whatif/quota/",
        {"snapshot": snap.pk, "queue": "root.a", "new_max": {"vcore": 1000}, "wait": True},
        format="json",
    )
    assert run.status_code == 201, run.content[:300]
    api_csv = client.get("/api/runs/export/").content.decode()
    page_csv = b"".join(
        staff_browser.get("/history.csv", {"partition": FORMULA}).streaming_content  # type: ignore[attr-defined]
    ).decode()
    for name, text in (("api", api_csv), ("page", page_csv)):
        rows = _cells(text)[1:]
        assert rows, (name, text[:300])
        cells = [c for row in rows for c in row]
        assert any(FORMULA in c for c in cells), (name, rows)
        bad = [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert bad == [], (name, bad)


@pytest.mark.parametrize(
    "name",
    [{"x": 1}, ["default"], 7, "", "a b", "p" * 201, "tab\there"],
    ids=["object", "list", "number", "empty", "space", "201", "tab"],
)
def test_a_partition_name_in_a_scenario_must_be_a_name(
    stored: models.ClusterSnapshot, staff: Any, name: object
) -> None:
    """A scenario's ``partition.name`` that is an object (once stored as its repr), a
    number, empty, too long or with white space: 400 naming ``partition.name``."""
    doc = scenario()
    doc["partition"]["name"] = name
    before = {k: v for k, v in db_counts().items() if k != "dashboard.Alert"}
    response = _client(staff).post("/api/snapshots/", doc, format="json")
    print(f"[answer] {name!r:.30}: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:500]
    assert "partition" in response.content.decode()
    assert {k: v for k, v in db_counts().items() if k != "dashboard.Alert"} == before
    assert not models.Partition.objects.filter(name__startswith="{").exists()


@pytest.mark.parametrize("field", ["partition", "cluster"])
def test_a_quota_change_partition_or_cluster_must_be_a_name(
    stored: models.ClusterSnapshot, staff: Any, field: str
) -> None:
    body: dict[str, Any] = {"partition": "default", "queue_path": "root.a", "new_delay": 60}
    body[field] = {"name": "default"}
    response = _client(staff).post("/api/quota-changes/", body, format="json")
    assert response.status_code == 400, response.content[:500]
    assert field in response.json()
