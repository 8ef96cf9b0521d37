"""The same folder uploaded twice on the import page stores one snapshot, and the
command line recognises the page's upload (issue 38, point 5): one rule for both."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard import models

pytestmark = pytest.mark.django_db

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b" / "rest"


def _upload(client: Client) -> Any:
    files = [
        SimpleUploadedFile(p.name, p.read_bytes(), content_type="application/json")
        for p in sorted(CLUSTER_B.glob("*.json"))
    ]
    return client.post(reverse("import"), {"kind": "snapshot", "upload": files}, follow=True)


def test_the_same_folder_twice_stores_one_snapshot_and_warns_once(staff: Any) -> None:
    client = Client()
    client.force_login(staff)
    first = _upload(client)
    assert first.status_code == 200
    (snapshot,) = models.ClusterSnapshot.objects.all()
    alerts = models.Alert.objects.count()
    second = _upload(client).content.decode()
    assert models.ClusterSnapshot.objects.count() == 1
    assert models.Alert.objects.count() == alerts  # its warnings are not raised again
    assert f"those snapshot {snapshot.pk} of" in second
    assert "nothing stored" in second
    # the command line, given the same folder, knows it too
    out, err = io.StringIO(), io.StringIO()
    call_command("import_snapshot", str(CLUSTER_B), stdout=out, stderr=err)
    assert out.getvalue().strip() == str(snapshot.pk)
    assert "nothing stored" in err.getvalue()
    assert models.ClusterSnapshot.objects.count() == 1
