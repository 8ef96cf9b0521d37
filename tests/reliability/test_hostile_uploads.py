"""Hostile input, third round, staff uploads: strings no database column can hold (NUL,
lone surrogates), names longer than their columns, times and quantities out of range,
and scenarios far larger than any cluster, answered 400/413 naming the field, nothing
stored.

Run on PostgreSQL as well (CI does): NUL bytes, surrogates and over-long names only
broke there.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from reliability_support import QUEUES_YAML, measured, scenario
from reliability_support import db_counts as all_counts
from rest_framework.test import APIClient

from dashboard import models

Doc = dict[str, Any]


def db_counts() -> dict[str, int]:
    """Rows of every model but the alert feed (a refused import is reported there)."""
    return {k: v for k, v in all_counts().items() if k != "dashboard.Alert"}


def _client(user: Any) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(user)
    return client


def _set_queue_name(doc: Doc, text: str) -> None:
    doc["queues"]["children"][0]["children"][0]["name"] = text
    for a in doc["allocations"]:
        a["queue"] = a["queue"].replace("root.a.x", f"root.a.{text}")


def _set_node(doc: Doc, text: str) -> None:
    doc["nodes"][0]["id"] = text
    for a in doc["allocations"]:
        a["node"] = text


def _set_resource_type(doc: Doc, text: str) -> None:
    doc["nodes"][0]["capacity"][text] = 5


def _set_app(doc: Doc, text: str) -> None:
    doc["allocations"][0]["app"] = text


def _set_key(doc: Doc, text: str) -> None:
    doc["allocations"][0]["key"] = text


def _set_ask_key(doc: Doc, text: str) -> None:
    doc["request"]["asks"][0]["key"] = text


def _set_unknown_key(doc: Doc, text: str) -> None:
    doc["partition"][text] = 1


PLACES: dict[str, Callable[[Doc, str], None]] = {
    "queue name": _set_queue_name,
    "node id": _set_node,
    "resource type": _set_resource_type,
    "application": _set_app,
    "allocation key": _set_key,
    "ask key": _set_ask_key,
    "a key": _set_unknown_key,
}


def _doc_with(place: str, text: str) -> Doc:
    doc = copy.deepcopy(scenario())
    PLACES[place](doc, text)
    return doc


def _post_body(client: APIClient, doc: Doc) -> Any:
    body = json.dumps(doc).encode()  # ensure_ascii: "\u0000" and "\ud800" as escapes
    return client.post("/api/snapshots/", body, content_type="application/json")


def _post_file(client: APIClient, doc: Doc, **fields: str) -> Any:
    upload = SimpleUploadedFile("scenario.json", json.dumps(doc).encode(), "application/json")
    return client.post("/api/snapshots/", {"files": [upload], **fields}, format="multipart")


HOSTILE_TEXT = {"nul": "x\x00y", "surrogate": "x\ud800y"}


@pytest.mark.parametrize("how", ["body", "file"])
@pytest.mark.parametrize("text", list(HOSTILE_TEXT))
@pytest.mark.parametrize("place", list(PLACES))
def test_nul_or_lone_surrogate_anywhere_in_a_snapshot_is_refused(
    stored: models.ClusterSnapshot, staff: Any, place: str, text: str, how: str
) -> None:
    """``\\u0000`` or a lone ``\\ud800`` in any string or key: 400, nothing stored."""
    client = _client(staff)
    before = db_counts()
    doc = _doc_with(place, HOSTILE_TEXT[text])
    response = _post_body(client, doc) if how == "body" else _post_file(client, doc)
    print(f"[answer] {place} {text} ({how}): {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:500]
    assert db_counts() == before


LONG_NAMES = {
    "queue name": 256,
    "node id": 256,
    "application": 256,
    "allocation key": 501,
    "resource type": 256,
    "ask key": 501,
}


@pytest.mark.parametrize(("place", "length"), list(LONG_NAMES.items()))
def test_a_name_longer_than_its_column_is_refused(
    stored: models.ClusterSnapshot, staff: Any, place: str, length: int
) -> None:
    client = _client(staff)
    before = db_counts()
    response = _post_body(client, _doc_with(place, "n" * length))
    print(f"[answer] {place} of {length}: {response.status_code} {response.content[:300]!r}")
    assert response.status_code == 400, response.content[:500]
    assert str(length - 1) in response.content.decode(), "names the longest length accepted"
    assert db_counts() == before


def test_a_queue_path_longer_than_1000_characters_is_refused(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    """Five names of 250 characters, each within the name limit: the path is not."""
    doc = copy.deepcopy(scenario())
    leaf: Doc = {"name": "q" * 250}
    for i in range(4):
        leaf = {"name": chr(ord("a") + i) * 250, "children": [leaf]}
    doc["queues"]["children"].append(leaf)
    client = _client(staff)
    before = db_counts()
    response = _post_body(client, doc)
    assert response.status_code == 400, response.content[:500]
    assert "1000" in response.content.decode()
    assert db_counts() == before


@pytest.mark.parametrize("name", ["p" * 201, "bad\x00name", "a b", "x" * 5000])
def test_a_partition_name_that_is_no_name_is_refused(
    stored: models.ClusterSnapshot, staff: Any, name: str
) -> None:
    client = _client(staff)
    before = db_counts()
    response = _post_file(client, scenario(), partition=name)
    print(f"[answer] partition {name[:20]!r}: {response.status_code} {response.content[:300]!r}")
    assert response.status_code == 400, response.content[:500]
    assert "partition" in response.json()
    assert db_counts() == before


@pytest.mark.parametrize("now", [1e30, -1e30, 1e300, -62135596801.0, 253402300800.0])
def test_a_now_out_of_range_is_refused(
    stored: models.ClusterSnapshot, staff: Any, now: float
) -> None:
    client = _client(staff)
    before = db_counts()
    response = _post_body(client, scenario(now=now))
    print(f"[answer] now={now}: {response.status_code} {response.content[:300]!r}")
    assert response.status_code == 400, response.content[:500]
    assert "now" in response.content.decode()
    assert db_counts() == before


@pytest.mark.parametrize("digits", [4300, 4301, 20000])
def test_a_config_quantity_of_thousands_of_digits_is_refused(staff: Any, digits: int) -> None:
    yaml_text = QUEUES_YAML.replace("max: {vcore: 8}", f"max: {{memory: {'9' * digits}}}")
    assert yaml_text != QUEUES_YAML
    client = _client(staff)
    before = db_counts()
    upload = SimpleUploadedFile("queues.yaml", yaml_text.encode(), "application/yaml")
    response = client.post("/api/configs/", {"file": upload}, format="multipart")
    print(f"[answer] {digits} digits: {response.status_code} {response.content[:300]!r}")
    assert response.status_code == 400, response.content[:500]
    assert "memory" in response.content.decode()
    assert db_counts() == before


def test_a_scenario_quantity_of_thousands_of_digits_is_refused(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    doc = copy.deepcopy(scenario())
    body = json.dumps(doc).replace(
        '"capacity": {"vcore": 10000}', f'"capacity": {{"vcore": {"9" * 5000}}}'
    )
    client = _client(staff)
    before = db_counts()
    response = client.post("/api/snapshots/", body.encode(), content_type="application/json")
    assert response.status_code == 400, response.content[:500]
    assert db_counts() == before


# --------------------------------------------------------------------------- size in rows


def _many_queues(count: int) -> Doc:
    doc = copy.deepcopy(scenario())
    doc["queues"]["children"].append(
        {"name": "wide", "children": [{"name": f"q{i}"} for i in range(count)]}
    )
    return doc


def test_a_scenario_with_more_queues_than_the_limit_is_refused_at_once(
    stored: models.ClusterSnapshot, staff: Any, settings: Any
) -> None:
    """200,000 queues in 4 MB (within the byte limit): 413 naming the queue limit, before
    any queue is built, as a JSON body and as a file."""
    doc = _many_queues(200_000)
    body = json.dumps(doc).encode()
    print(f"[figures] 200,000-queue scenario: {len(body) / 1e6:.1f} MB")
    client = _client(staff)
    before = db_counts()
    with measured("refusing 200,000 queues (JSON body)"):
        response = client.post("/api/snapshots/", body, content_type="application/json")
    assert response.status_code == 413, response.content[:500]
    errors = response.json()
    assert "DASHBOARD_MAX_SNAPSHOT_QUEUES" in json.dumps(errors), errors
    with measured("refusing 200,000 queues (file)"):
        response = _post_file(client, doc)
    assert response.status_code == 413, response.content[:500]
    assert db_counts() == before


def test_a_scenario_at_the_queue_limit_is_imported(staff: Any, settings: Any) -> None:
    settings.DASHBOARD_MAX_SNAPSHOT_QUEUES = 300
    client = _client(staff)
    # root, a, x, y, b, wide: 6 queues beside the wide ones
    response = _post_body(client, _many_queues(294))
    assert response.status_code == 201, response.content[:500]
    response = _post_body(client, _many_queues(295))
    assert response.status_code == 413, response.content[:500]
    assert "300" in response.content.decode()
