"""Config uploads above DASHBOARD_IMPORT_ASYNC_BYTES are imported by a worker: the request
answers 202 with an import job at once; the job shows its stage and progress, stores
what a direct import stores, and a failure becomes one alert (Celery eager here)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from queue_configs import config_yaml
from rest_framework.test import APIClient

from dashboard import models, services

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _small_threshold(settings: Any) -> None:
    settings.DASHBOARD_IMPORT_ASYNC_BYTES = 10_000


def test_a_large_upload_is_a_job_that_stores_the_same_version(
    staff_client: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    text = config_yaml(400, 0).encode()
    assert len(text) > 10_000
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/api/configs/", {"file": SimpleUploadedFile("big.yaml", text)}, format="multipart"
        )
    assert response.status_code == 202, response.content[:500]
    job_id = response.json()["id"]
    job = staff_client.get(f"/api/import-jobs/{job_id}/").json()
    assert (job["status"], job["progress"]) == ("done", 100), job
    version = models.ConfigVersion.objects.get(pk=job["versions"][0])
    assert version.filename == "big.yaml"
    assert (
        version.queues.count()
        == services.import_config(text, filename="again.yaml").versions[0].queues.count()
    )


def test_a_small_upload_is_still_imported_in_the_request(staff_client: APIClient) -> None:
    text = config_yaml(20, 0).encode()
    assert len(text) < 10_000
    response = staff_client.post(
        "/api/configs/", {"file": SimpleUploadedFile("small.yaml", text)}, format="multipart"
    )
    assert response.status_code == 201
    assert not models.ImportJob.objects.exists()


@pytest.mark.parametrize(
    ("tail", "partition"),
    [(b"  - broken: [\n", None), (b"", "nope")],
    ids=["refused-by-the-importer", "unknown-partition"],
)
def test_a_failed_job_leaves_one_alert_and_no_version(
    staff_client: APIClient,
    django_capture_on_commit_callbacks: Any,
    tail: bytes,
    partition: str | None,
) -> None:
    text = config_yaml(400, 0).encode() + tail
    data: dict[str, Any] = {"file": SimpleUploadedFile("big.yaml", text)}
    if partition:
        data["partition"] = partition
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post("/api/configs/", data, format="multipart")
    assert response.status_code == 202
    job = models.ImportJob.objects.get()
    assert job.status == models.ImportJob.Status.FAILED
    assert job.error
    assert not models.ConfigVersion.objects.exists()
    alerts = models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_FAILED)
    assert alerts.count() == 1
    assert alerts.get().count == 1


def test_the_import_page_queues_a_large_upload_and_lists_its_progress(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    page = Client()
    page.force_login(staff)
    text = config_yaml(400, 0).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = page.post(
            "/import/", {"kind": "config", "upload": SimpleUploadedFile("big.yaml", text)}
        )
    assert response.status_code == 302
    listing = page.get("/import/").content.decode()
    assert "import job" in listing
    assert "100% · done" in listing


def test_a_redelivered_job_does_nothing(staff: Any) -> None:
    job = services.queue_config_import(config_yaml(50, 0).encode(), user=staff)
    assert services.run_import_job(job.pk) is not None
    assert services.run_import_job(job.pk) is None
    assert models.ConfigVersion.objects.count() == 1
