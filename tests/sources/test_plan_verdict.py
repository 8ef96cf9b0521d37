"""The scheduler's own verdict on a plan (``POST /ws/v1/validate-conf`` through the
partition's live source) beside the dashboard's, and a kept plan marked applied once the
scheduler's ``/ws/v1/config`` checksum is the plan's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient
from sources_helpers import T0, serving
from test_config_poll import answer, poll
from test_observed_poll import Ring, served

from dashboard import models as dm
from dashboard.sources.models import ClusterSource

__all__ = ["served"]  # the fixture, used by name

pytestmark = pytest.mark.django_db


class Validator:
    """A scheduler's validate-conf endpoint: answers *reply*, keeps each body it got."""

    def __init__(self) -> None:
        self.reply: tuple[int, bytes] = (200, b'{"allowed":true}\n')
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()


@pytest.fixture
def validator() -> Iterator[tuple[Validator, str]]:
    v = Validator()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with v.lock:
                v.bodies.append(body)
            status, reply = v.reply
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    with serving(Handler) as url:
        yield v, url


def _in_force(yunikorn: Any) -> tuple[ClusterSource, dm.ConfigVersion]:
    """A source whose first poll stored the scheduler's config: the config in force."""
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    yunikorn.set_json("/ws/v1/config", answer())
    poll(source, T0)
    return source, dm.ConfigVersion.objects.get(planned=False)


def _plan(staff: Any, text: str) -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(staff)
    response = client.post("/api/plans/", {"text": text, "partition": "default"}, format="json")
    body: dict[str, Any] = response.json()
    return body


def _lowered(text: str) -> str:
    """*text* with root.batch's max vcore (the only "vcore": "10") lowered to 8."""
    assert text.count('"vcore": "10"') == 1, text
    return text.replace('"vcore": "10"', '"vcore": "8"')


def test_the_schedulers_yes_is_shown_and_it_got_the_queues_yaml(
    served: tuple[Any, Ring], validator: tuple[Validator, str], staff: Any
) -> None:
    yunikorn, _ = served
    v, url = validator
    source, version = _in_force(yunikorn)
    # the validator is another server: the source points there once its first poll is in
    ClusterSource.objects.filter(pk=source.pk).update(base_url=url)
    body = _plan(staff, version.text)
    assert body["scheduler_verdict"] == {
        "source": "acme-ml",
        "allowed": True,
        "reason": "",
        "error": "",
        "disagrees": False,
    }
    assert v.bodies == [version.text.encode()]


def test_a_refusal_the_dashboard_does_not_make_is_a_disagreement_on_the_page(
    served: tuple[Any, Ring], validator: tuple[Validator, str], staff: Any
) -> None:
    yunikorn, _ = served
    v, url = validator
    source, version = _in_force(yunikorn)
    ClusterSource.objects.filter(pk=source.pk).update(base_url=url)
    v.reply = (200, json.dumps({"allowed": False, "reason": "queue <root.x> unknown"}).encode())
    pages = Client()
    pages.force_login(staff)
    html = pages.post(
        reverse("plan"), {"partition": "default/default", "text": version.text, "action": "plan"}
    ).content.decode()
    box = html.split('data-testid="scheduler-verdict">', 1)[1].split("</div>\n</div>", 1)[0]
    assert "it refuses it" in box
    assert "queue &lt;root.x&gt; unknown" in box
    assert 'data-testid="verdict-disagrees"' in box
    assert "the scheduler refuses a config the dashboard accepts" in box


def test_no_source_no_verdict_and_a_failing_scheduler_is_said(
    served: tuple[Any, Ring], validator: tuple[Validator, str], staff: Any
) -> None:
    yunikorn, _ = served
    v, url = validator
    source, version = _in_force(yunikorn)
    ClusterSource.objects.filter(pk=source.pk).update(enabled=False)
    assert _plan(staff, version.text)["scheduler_verdict"] is None
    ClusterSource.objects.filter(pk=source.pk).update(enabled=True, base_url=url)
    v.reply = (404, b'{"message":"not found"}')
    verdict = _plan(staff, version.text)["scheduler_verdict"]
    assert verdict["allowed"] is None
    assert "HTTP 404" in verdict["error"]
    assert verdict["disagrees"] is False


def test_a_kept_plan_is_marked_applied_when_the_scheduler_runs_it(
    served: tuple[Any, Ring], staff: Any
) -> None:
    yunikorn, _ = served
    source, in_force = _in_force(yunikorn)
    client = APIClient()
    client.force_authenticate(staff)
    proposed = _lowered(in_force.text)
    kept = client.post("/api/plans/keep/", {"text": proposed}, format="json")
    assert kept.status_code == 201, kept.content
    planned = dm.ConfigVersion.objects.get(planned=True)
    assert planned.applied_at is None

    # the scheduler still runs the old config: nothing applied
    poll(source, T0 + timedelta(minutes=1))
    planned.refresh_from_db()
    assert planned.applied_at is None

    # it now runs the plan: its checksum is the plan's
    yunikorn.set_json("/ws/v1/config", answer(batch_vcore="8", checksum=planned.checksum))
    poll(source, T0 + timedelta(minutes=2))
    planned.refresh_from_db()
    assert planned.applied_at == T0 + timedelta(minutes=2)
    assert client.get(f"/api/configs/{planned.pk}/").json()["applied_at"] is not None
    pages = Client()
    pages.force_login(staff)
    html = pages.get(reverse("config", args=[planned.pk])).content.decode()
    assert 'data-testid="planned-applied"' in html
