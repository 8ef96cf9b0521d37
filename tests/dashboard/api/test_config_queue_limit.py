"""A config takes the snapshots' queue limit (DASHBOARD_MAX_SNAPSHOT_QUEUES): above it the
upload page, the API's import and its plan answer 413 naming the limit, counted before
anything is decoded, and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from dashboard import models
from dashboard.importers.config import TooManyConfigQueues, parse_config

pytestmark = pytest.mark.django_db

LIMIT = 12


def config(queues: int) -> bytes:
    """A config of *queues* queues: root and its children, one a parent of the rest."""
    leaves = "".join(f"              - name: q{i}\n" for i in range(queues - 3))
    return (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: solo\n          - name: team\n            queues:\n" + leaves
    ).encode()


@pytest.fixture(autouse=True)
def _limit(settings: Any) -> None:
    settings.DASHBOARD_MAX_SNAPSHOT_QUEUES = LIMIT


def test_the_count_is_the_scheduler_s_queues() -> None:
    assert len(list(parse_config(config(LIMIT), max_queues=LIMIT).partitions[0].queues())) == LIMIT
    with pytest.raises(TooManyConfigQueues) as refused:
        parse_config(config(LIMIT + 1), max_queues=LIMIT)
    assert refused.value.limit == LIMIT


def test_the_api_refuses_a_config_above_the_limit(staff_client: APIClient) -> None:
    upload = SimpleUploadedFile("queues.yaml", config(LIMIT + 1))
    answer = staff_client.post("/api/configs/", {"file": upload}, format="multipart")
    assert answer.status_code == 413, answer.content
    body = answer.json()
    assert body["limit"] == LIMIT
    assert body["setting"] == "DASHBOARD_MAX_SNAPSHOT_QUEUES"
    message = body["queues.yaml"][0]
    assert f"more than the limit of {LIMIT} queues" in message
    assert "DASHBOARD_MAX_SNAPSHOT_QUEUES" in message
    assert not models.ConfigVersion.objects.exists()
    assert not models.Partition.objects.exists()
    # at the limit: imported
    upload = SimpleUploadedFile("queues.yaml", config(LIMIT))
    assert (
        staff_client.post("/api/configs/", {"file": upload}, format="multipart").status_code == 201
    )


def test_a_plan_of_a_config_above_the_limit_is_refused(staff_client: APIClient) -> None:
    upload = SimpleUploadedFile("queues.yaml", config(LIMIT))
    assert (
        staff_client.post("/api/configs/", {"file": upload}, format="multipart").status_code == 201
    )
    answer = staff_client.post(
        "/api/plans/", {"text": config(LIMIT + 5).decode(), "partition": "default"}, format="json"
    )
    assert answer.status_code == 413, answer.content
    assert answer.json()["setting"] == "DASHBOARD_MAX_SNAPSHOT_QUEUES"
    assert models.ConfigVersion.objects.count() == 1


def test_the_upload_page_refuses_a_config_above_the_limit(staff: Any) -> None:
    client = Client()
    client.force_login(staff)
    upload = SimpleUploadedFile("queues.yaml", config(LIMIT + 1))
    answer = client.post("/import/", {"kind": "config", "upload": upload})
    assert answer.status_code == 413, answer.content[:500]
    assert b"DASHBOARD_MAX_SNAPSHOT_QUEUES" in answer.content
    assert not models.ConfigVersion.objects.exists()
