"""Staff writes that succeed, fuzzed: Hypothesis draws valid requests (queues, quotas,
delays, asks, snapshot uploads, alert and change actions) and schemathesis sends them
through the served schema to the Django app, checking each answer against the schema.

``test_api_fuzz.py`` sends what schemathesis generates from the schema, almost all of
it refused (the services' rules are stricter than any schema); this suite makes sure
the accepted path is fuzzed too: every drawn request must succeed (2xx) and store what
it says, with a body the schema documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import QUEUES_YAML, scenario
from rest_framework.authtoken.models import Token
from test_api_fuzz import CHECKS, SCHEMA_DOC

from dashboard import models, services

schema = schemathesis.openapi.from_dict(SCHEMA_DOC)
EXAMPLES = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
pytestmark = pytest.mark.timeout(600)

QUEUES = ["root.a", "root.a.x", "root.a.y", "root.b"]
quantities = st.integers(min_value=0, max_value=2**40)
resources = st.dictionaries(st.sampled_from(["vcore", "memory", "pods"]), quantities, max_size=3)
delays = st.one_of(
    st.integers(min_value=0, max_value=9_223_372_036),
    st.sampled_from(["1ns", "5m", "1h30m", "0s"]),
)


@pytest.fixture
def world(staff: Any) -> Iterator[dict[str, Any]]:
    """The small scenario and its config; the staff user's token; the app as gunicorn runs it."""
    services.import_config(QUEUES_YAML.encode(), filename="queues.yaml", user=staff)
    snap = services.import_snapshot({"scenario.json": json.dumps(scenario()).encode()}, user=staff)
    token = str(Token.objects.create(user=staff).key)
    handler = WSGIHandler()
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield {"snapshot": snap, "headers": {"Authorization": f"Token {token}"}, "app": handler}
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _send(world: dict[str, Any], path: str, method: str, **case: Any) -> Any:
    operation = schema[path][method]
    response = operation.Case(**case).call_and_validate(
        app=world["app"], headers=world["headers"], checks=CHECKS
    )
    assert 200 <= response.status_code < 300, (path, case, response.text[:400])
    return response.json() if response.content else None


@given(data=st.data())
@EXAMPLES
def test_quota_changes_that_are_valid_succeed(world: dict[str, Any], data: st.DataObject) -> None:
    """Create, edit and cancel drawn changes: each answered 2xx within the schema."""
    body: dict[str, Any] = {
        "partition": "default",
        "queue_path": data.draw(st.sampled_from(QUEUES)),
        "new_max": data.draw(resources),
        "snapshot": world["snapshot"].pk,
    }
    if data.draw(st.booleans()):
        body["new_delay"] = data.draw(delays)
    created = _send(world, "/api/quota-changes/", "POST", body=body, media_type="application/json")
    assert models.QuotaChange.objects.filter(pk=created["id"]).exists()
    if created["state"] == models.QuotaChange.State.WAITING:
        edit = {"new_max": data.draw(resources)}
        _send(
            world,
            "/api/quota-changes/{id}/",
            "PATCH",
            path_parameters={"id": created["id"]},
            body=edit,
            media_type="application/json",
        )
    latest = models.QuotaChange.objects.order_by("-id").first()
    assert latest is not None
    if latest.state == models.QuotaChange.State.WAITING:
        _send(world, "/api/quota-changes/{id}/cancel/", "POST", path_parameters={"id": latest.pk})


@given(data=st.data())
@EXAMPLES
def test_whatifs_and_rounds_that_are_valid_succeed(
    world: dict[str, Any], data: st.DataObject
) -> None:
    snap = world["snapshot"].pk
    quota = {
        "snapshot": snap,
        "queue": data.draw(st.sampled_from(QUEUES)),
        "new_max": data.draw(resources),
        "wait": True,
    }
    run = _send(world, "/api/whatif/quota/", "POST", body=quota, media_type="application/json")
    assert run["status"] in ("done", "failed"), run
    ask = {
        "key": data.draw(st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True)),
        "queue": data.draw(st.sampled_from(["root.a.x", "root.a.y", "root.b"])),
        "resources": {"vcore": data.draw(st.integers(min_value=1, max_value=20_000))},
    }
    preempt = {"snapshot": snap, "ask": ask, "wait": True}
    _send(world, "/api/whatif/preempt/", "POST", body=preempt, media_type="application/json")
    rounds = {"snapshot": snap, "wait": True}
    _send(world, "/api/rounds/", "POST", body=rounds, media_type="application/json")


names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


@given(data=st.data())
@EXAMPLES
def test_snapshot_uploads_that_are_valid_succeed(
    world: dict[str, Any], data: st.DataObject
) -> None:
    """A scenario with drawn node ids, application ids and quantities: 201, stored."""
    doc = scenario()
    node = data.draw(names)
    doc["nodes"][0]["id"] = node
    doc["nodes"][0]["capacity"]["vcore"] = data.draw(st.integers(8000, 2**40))
    for a in doc["allocations"]:
        a["node"] = node
        a["app"] = data.draw(names)
    snap = _send(world, "/api/snapshots/", "POST", body=doc, media_type="application/json")
    assert models.ClusterSnapshot.objects.filter(pk=snap["id"]).exists()


def test_alert_actions_succeed(world: dict[str, Any], staff: Any) -> None:
    services.raise_alert(models.Alert.Kind.IMPORT_FAILED, "fuzz", level=models.Alert.Level.ERROR)
    alert = models.Alert.objects.order_by("-id").first()
    assert alert is not None
    _send(world, "/api/alerts/{id}/acknowledge/", "POST", path_parameters={"id": alert.pk})
    answer = _send(world, "/api/alerts/acknowledge-all/", "POST")
    assert answer == {"unread": 0}
