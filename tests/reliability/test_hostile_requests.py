"""Hostile input, third round, request shapes: the schema states the bounds and enums
the server enforces, and form floods, chunked bodies, repeated JSON keys and configs
above the config limit are answered with a clean JSON 4xx, nothing stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from reliability_support import QUEUES_YAML, MiB, db_counts
from rest_framework.test import APIClient

from dashboard import models

SCHEMA_CACHE: dict[str, Any] = {}


def _client(user: Any) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(user)
    return client


def _schema(viewer: Any) -> dict[str, Any]:
    if "doc" not in SCHEMA_CACHE:
        served = _client(viewer).get("/api/schema/", {"format": "json"})
        SCHEMA_CACHE["doc"] = json.loads(served.content)
    return SCHEMA_CACHE["doc"]  # type: ignore[no-any-return]


def _param(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    for p in schema["paths"][path]["get"].get("parameters", []):
        if p["name"] == name:
            return p  # type: ignore[no-any-return]
    raise AssertionError(f"{path} has no parameter {name}")


@pytest.mark.parametrize("path", ["/api/runs/", "/api/alerts/", "/api/rounds/"])
def test_the_schema_states_the_paging_bounds(viewer: Any, path: str) -> None:
    schema = _schema(viewer)
    page = _param(schema, path, "page")["schema"]
    size = _param(schema, path, "page_size")["schema"]
    assert page.get("minimum") == 1, page
    assert size.get("minimum") == 1, size
    assert size.get("maximum") == 500, size


@pytest.mark.parametrize(
    ("path", "name", "model_choices"),
    [
        ("/api/quota-changes/", "clock_source", models.QuotaChange.ClockSource.values),
        ("/api/quota-changes/", "state", models.QuotaChange.State.values),
        ("/api/runs/", "kind", models.PreemptionRun.Kind.values),
        ("/api/runs/", "status", models.PreemptionRun.Status.values),
        ("/api/alerts/", "level", models.Alert.Level.values),
        ("/api/alerts/", "kind", models.Alert.Kind.values),
    ],
)
def test_enum_filters_are_in_the_schema_and_enforced(
    viewer: Any, path: str, name: str, model_choices: list[str]
) -> None:
    """The schema lists the values; an unknown one is a 400 naming the filter."""
    param = _param(_schema(viewer), path, name)["schema"]
    enum = param.get("enum") or param.get("items", {}).get("enum")
    assert sorted(enum or []) == sorted(model_choices), param
    response = _client(viewer).get(path, {name: "bogus"})
    assert response.status_code == 400, response.content[:300]
    assert name in response.json()


def test_more_than_1000_form_fields_is_a_json_400(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    body = "&".join(f"f{i}=x" for i in range(1100))
    before = db_counts()
    response = _client(staff).post(
        "/api/quota-changes/", body, content_type="application/x-www-form-urlencoded"
    )
    print(f"[answer] 1100 fields: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    assert "1000" in json.dumps(response.json())
    assert db_counts() == before


def test_more_than_50_files_is_a_json_400(stored: models.ClusterSnapshot, staff: Any) -> None:
    files = [SimpleUploadedFile(f"f{i}.json", b"{}", "application/json") for i in range(60)]
    before = db_counts()
    response = _client(staff).post("/api/snapshots/", {"files": files}, format="multipart")
    print(f"[answer] 60 files: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    assert "50" in json.dumps(response.json())
    assert db_counts() == before


def test_a_chunked_body_is_refused_411(stored: models.ClusterSnapshot, staff: Any) -> None:
    """A body sent chunked (no Content-Length) would be read as empty: 411 instead."""
    before = db_counts()
    body = {"partition": "default", "queue_path": "root.a", "new_delay": 60}
    response: Any = _client(staff).generic(
        "POST",
        "/api/quota-changes/",
        json.dumps(body),
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
    )
    print(f"[answer] chunked: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 411, response.content[:300]
    assert "Content-Length" in json.dumps(response.json())
    assert db_counts() == before


def test_repeated_keys_in_a_json_body_are_refused(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    body = b'{"partition": "default", "queue_path": "root.a", "new_delay": 60, "new_delay": 1}'
    before = db_counts()
    response = _client(staff).post("/api/quota-changes/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "duplicate key 'new_delay'" in response.json()["detail"]
    assert db_counts() == before


def test_a_config_above_the_config_limit_is_refused_413_at_once(staff: Any) -> None:
    """A 3 MiB queues.yaml (within the upload limit, above the config limit): 413 naming
    the limit, no import job queued."""
    padding = "# " + "x" * 98 + "\n"
    text = QUEUES_YAML + padding * (3 * MiB // len(padding))
    before = db_counts()
    upload = SimpleUploadedFile("queues.yaml", text.encode(), "application/yaml")
    response = _client(staff).post("/api/configs/", {"file": upload}, format="multipart")
    print(f"[answer] 3 MiB config: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 413, response.content[:300]
    assert "2097152" in response.content.decode()
    assert db_counts() == before


@pytest.mark.parametrize("path", ["/api/quota-changes/", "/api/whatif/quota/"])
def test_a_resource_type_longer_than_a_name_is_refused(
    stored: models.ClusterSnapshot, staff: Any, path: str
) -> None:
    """Resource types follow the one rule for names (at most 255 characters) here too."""
    body: dict[str, Any] = {"new_max": {"v" * 300: 1}, "snapshot": stored.pk, "wait": True}
    body.update({"partition": "default", "queue_path": "root.a", "queue": "root.a"})
    before = db_counts()
    response = _client(staff).post(path, body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "new_max" in response.json()
    assert db_counts() == before
