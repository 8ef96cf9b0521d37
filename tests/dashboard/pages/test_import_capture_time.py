"""The import page takes a capture time for REST answers (issue 24, item 3): timers and
history count from it; answers carrying their own time refuse another one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_answers import rest_files
from two_clusters import logged_in

from dashboard import models

pytestmark = pytest.mark.django_db


def _uploads(files: dict[str, bytes]) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(name, data) for name, data in files.items()]


def test_rest_answers_imported_with_a_capture_time_are_stamped_with_it(
    staff: Any, fixtures_dir: Path
) -> None:
    page = logged_in(staff).get(reverse("import")).content.decode()
    assert 'name="captured_at"' in page
    assert 'type="datetime-local"' in page
    answer = logged_in(staff).post(
        reverse("import"),
        {
            "kind": "snapshot",
            "captured_at": "2026-09-01T10:00:05",
            "upload": _uploads(rest_files(fixtures_dir / "rest")),
        },
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    snapshot = models.ClusterSnapshot.objects.get()
    assert snapshot.captured_at == datetime(2026, 9, 1, 10, 0, 5, tzinfo=UTC)


def test_a_state_dump_refuses_another_capture_time(staff: Any, fixtures_dir: Path) -> None:
    dump = (fixtures_dir / "rest" / "fullstatedump.json").read_bytes()
    answer = logged_in(staff).post(
        reverse("import"),
        {
            "kind": "snapshot",
            "captured_at": "2026-09-01T11:00",
            "upload": _uploads({"fullstatedump.json": dump}),
        },
    )
    assert answer.status_code == 400
    assert "carry their capture time" in answer.content.decode()
    assert not models.ClusterSnapshot.objects.exists()


def test_a_config_takes_no_capture_time(staff: Any, fixtures_dir: Path) -> None:
    config = (fixtures_dir / "config" / "queues-nested-gpu.yaml").read_bytes()
    answer = logged_in(staff).post(
        reverse("import"),
        {
            "kind": "config",
            "captured_at": "2026-09-01T11:00",
            "upload": _uploads({"queues.yaml": config}),
        },
    )
    assert answer.status_code == 400
    assert "A capture time is for a cluster snapshot." in answer.content.decode()
    assert not models.ConfigVersion.objects.exists()
