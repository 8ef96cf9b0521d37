"""Hostile input, second round: what a fuzzing API client found (delays, dates, NUL bytes,
junk paging) answered with a 4xx naming the field, and nothing stored.

Run on PostgreSQL as well (CI does): the date offsets and NUL bytes only broke there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from reliability_support import db_counts
from rest_framework.test import APIClient

from dashboard import models
from dashboard.importers import export as config_export
from dashboard.importers.errors import ImportFailure
from dashboard.pages.forms import ChangeForm


def _client(user: Any) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(user)
    return client


# ------------------------------------------------------------------------------ delays

BAD_DELAYS: list[tuple[object, str]] = [
    ("nan", "finite"),
    ("NaN", "finite"),
    ("inf", "finite"),
    ("-inf", "finite"),
    ("1e400", "finite"),
    (1e300, "292"),
    (1e10, "292"),
    ("1e10", "292"),
    (1e-300, "1ns"),
    ("1e-10", "1ns"),
    (4e-10, "1ns"),
]


@pytest.mark.parametrize(("delay", "word"), BAD_DELAYS, ids=[repr(d) for d, _ in BAD_DELAYS])
def test_quota_change_delay_out_of_range_is_refused(
    stored: models.ClusterSnapshot, staff: Any, viewer: Any, delay: object, word: str
) -> None:
    """NaN, infinities, delays beyond Go's time.Duration and below its 1ns resolution: 400."""
    client = _client(staff)
    before = db_counts()
    body = {"partition": "default", "queue_path": "root.a", "new_delay": delay}
    response = client.post("/api/quota-changes/", body, format="json")
    print(f"[answer] new_delay={delay!r}: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:500]
    errors = response.json()
    assert "new_delay" in errors, errors
    assert word.lower() in " ".join(errors["new_delay"]).lower(), errors
    assert db_counts() == before
    # the lists every user reads still answer
    for path in ("/api/quota-changes/", "/changes/"):
        reader = Client(raise_request_exception=False)
        reader.force_login(viewer)
        assert reader.get(path).status_code == 200, path


def test_quota_change_nan_literal_in_json_body_is_refused(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    """A NaN token in the body: DRF's strict JSON reader refuses it (400 naming NaN)."""
    client = _client(staff)
    before = db_counts()
    body = b'{"partition": "default", "queue_path": "root.a", "new_delay": NaN}'
    response = client.post("/api/quota-changes/", body, content_type="application/json")
    assert response.status_code == 400, response.content[:500]
    assert "NaN" in response.json()["detail"]
    assert db_counts() == before


def test_edit_of_a_change_refuses_a_huge_delay(stored: models.ClusterSnapshot, staff: Any) -> None:
    client = _client(staff)
    created = client.post(
        "/api/quota-changes/",
        {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 4000}},
        format="json",
    )
    assert created.status_code == 201, created.content
    before = db_counts()
    response = client.patch(
        f"/api/quota-changes/{created.json()['id']}/", {"new_delay": 1e10}, format="json"
    )
    assert response.status_code == 400, response.content[:500]
    assert "new_delay" in response.json()
    assert db_counts() == before


def test_delays_yunikorn_reads_exactly_are_accepted(
    stored: models.ClusterSnapshot, staff: Any
) -> None:
    """0 (never enforce), 1ns, the largest Go duration in whole seconds, and "5m"."""
    client = _client(staff)
    for delay, seconds in ((0, 0.0), ("1ns", 1e-9), (9223372036, 9223372036.0), ("5m", 300.0)):
        response = client.post(
            "/api/quota-changes/",
            {"partition": "default", "queue_path": "root.a", "new_delay": delay},
            format="json",
        )
        assert response.status_code == 201, (delay, response.content[:500])
        assert response.json()["new_delay"] == seconds


def test_the_change_form_and_the_config_hand_back_share_the_delay_rule() -> None:
    """The page's form and the config hand-back refuse what the API refuses."""
    form = ChangeForm(data={"queue": "root.a", "delay": "3000000h"}, types=["vcore"])
    assert not form.is_valid()
    assert "292" in form.errors.as_text(), form.errors.as_text()
    for bad in (float("nan"), 1e10, 1e-300):
        with pytest.raises(ImportFailure) as info:
            config_export._delay_text(bad, "root.a")
        assert info.value.location == "delays"


# ---------------------------------------------------------------------- date filters

DATE_FILTERS = [
    ("/api/snapshots/", "captured_after"),
    ("/api/snapshots/", "captured_before"),
    ("/api/runs/", "queued_after"),
    ("/api/runs/", "queued_before"),
    ("/api/runs/export/", "queued_after"),
    ("/api/alerts/", "created_after"),
]


@pytest.mark.parametrize("offset", ["-17:00", "+16:00", "+23:59", "-16:00"])
@pytest.mark.parametrize(("path", "param"), DATE_FILTERS)
def test_date_filter_with_an_offset_postgresql_refuses_is_a_400(
    stored: models.ClusterSnapshot, viewer: Any, path: str, param: str, offset: str
) -> None:
    response = _client(viewer).get(path, {param: f"2026-01-01T00:00:00{offset}"})
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    assert param in body, body
    assert "offset" in " ".join(body[param]).lower(), body


@pytest.mark.parametrize(("path", "param"), DATE_FILTERS)
def test_date_filter_with_the_widest_valid_offsets_answers(
    stored: models.ClusterSnapshot, viewer: Any, path: str, param: str
) -> None:
    for offset in ("-15:59", "+15:59", "Z", "+05:30"):
        response = _client(viewer).get(path, {param: f"2026-01-01T00:00:00{offset}"})
        assert response.status_code == 200, (offset, response.content[:500])


# -------------------------------------------------------------------------- NUL bytes

NUL_QUERIES = [
    ("/api/snapshots/", {"partition": "de\x00fault"}, "partition"),
    ("/api/runs/", {"queue": "root\x00.a"}, "queue"),
    ("/api/runs/export/", {"queue_prefix": "\x00"}, "queue_prefix"),
    ("/api/alerts/", {"kind": "a\x00"}, "kind"),
    ("/api/quota-changes/", {"queue": "\x00"}, "queue"),
    ("/api/configs/", {"checksum": "\x00"}, "checksum"),
    ("/api/sources/", {"partition": "\x00"}, "partition"),
    ("/history/", {"queue": "\x00"}, "queue"),
    ("/alerts/", {"kind": "\x00"}, "kind"),
    ("/api/runs/", {"\x00name": "x"}, "\\x00name"),
]


@pytest.mark.parametrize(("path", "params", "field"), NUL_QUERIES, ids=[q[0] for q in NUL_QUERIES])
def test_nul_byte_in_a_query_string_is_a_400_naming_the_parameter(
    stored: models.ClusterSnapshot, viewer: Any, path: str, params: dict[str, str], field: str
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(viewer)
    response = client.get(path, params)
    assert response.status_code == 400, response.content[:500]
    assert field in response.content.decode(), response.content[:500]
    assert "NUL" in response.content.decode()


def test_nul_byte_in_export_parameters_is_a_400(
    stored: models.ClusterSnapshot, viewer: Any
) -> None:
    client = _client(viewer)
    version = models.ConfigVersion.objects.first()
    assert version is not None
    for path, params in (
        (f"/api/snapshots/{stored.pk}/export/", {"ask": "a\x00"}),
        (f"/api/snapshots/{stored.pk}/export/", {"quota": "root.a=\x00"}),
        (f"/api/snapshots/{stored.pk}/allocations/", {"queue": "\x00"}),
        (f"/api/configs/{version.pk}/export/", {"form": "queues\x00"}),
        (f"/api/configs/{version.pk}/diff/", {"other": "1\x00"}),
    ):
        response = client.get(path, params)
        assert response.status_code == 400, (path, response.content[:500])
        assert next(iter(params)) in response.json(), response.json()


NUL_JSON_BODIES = [
    ("/api/snapshots/", None, "name"),
    ("/api/quota-changes/", {"partition": "default", "queue_path": "root.a\x00"}, "queue_path"),
    ("/api/whatif/quota/", {"queue": "root.a", "new_max": {"vc\x00ore": 1}}, "new_max.vc\\x00ore"),
    ("/api/whatif/preempt/", {"ask_key": "k\x00"}, "ask_key"),
    ("/api/rounds/", {"ask_keys": ["a", "b\x00"]}, "ask_keys[1]"),
    ("/api/rounds/", {"idempotency_key": "\x00"}, "idempotency_key"),
]


@pytest.mark.parametrize(
    ("path", "doc", "field"), NUL_JSON_BODIES, ids=[f"{p}-{f}" for p, _, f in NUL_JSON_BODIES]
)
def test_nul_byte_in_a_json_body_is_a_400_naming_the_field(
    stored: models.ClusterSnapshot,
    staff: Any,
    path: str,
    doc: dict[str, Any] | None,
    field: str,
) -> None:
    if doc is None:  # a scenario with a NUL in a queue name, posted as the body
        from reliability_support import scenario

        body = scenario()
        body["queues"]["children"][0]["name"] = "na\x00me"
        field = "queues.children[0].name"
    else:
        body = {**doc, "snapshot": stored.pk}
    before = db_counts()
    response = _client(staff).post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content[:500]
    assert field in response.json(), response.json()
    assert db_counts() == before


def test_nul_byte_in_multipart_fields_is_a_400(stored: models.ClusterSnapshot, staff: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from reliability_support import QUEUES_YAML, scenario

    client = _client(staff)
    page = Client(raise_request_exception=False)
    page.force_login(staff)
    before = db_counts()
    cases = [
        (
            "/api/snapshots/",
            {
                "files": SimpleUploadedFile("scenario.json", json.dumps(scenario()).encode()),
                "partition": "def\x00ault",
            },
            "partition",
        ),
        (
            "/api/configs/",
            {"file": SimpleUploadedFile("queues.yaml", QUEUES_YAML.encode()), "partition": "\x00"},
            "partition",
        ),
    ]
    for path, data, field in cases:
        response = client.post(path, data, format="multipart")
        assert response.status_code == 400, (path, response.content[:500])
        assert field in response.json(), response.json()
    page_answer = page.post(
        "/import/",
        {"kind": "con\x00fig", "upload": SimpleUploadedFile("queues.yaml", QUEUES_YAML.encode())},
    )
    assert page_answer.status_code == 400, page_answer.content[:500]
    assert "kind" in page_answer.content.decode()
    assert db_counts() == before


# ------------------------------------------------------------------- paging, ordering


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/runs/", {"page": "abc"}, "page"),
        ("/api/runs/", {"page": "0"}, "page"),
        ("/api/runs/", {"page": "-1"}, "page"),
        ("/api/runs/", {"page_size": "x"}, "page_size"),
        ("/api/runs/", {"page_size": "0"}, "page_size"),
        ("/api/runs/", {"page_size": "100000"}, "page_size"),
        ("/api/alerts/", {"page_size": "-5"}, "page_size"),
        ("/api/snapshots/", {"page": "1.5"}, "page"),
        ("/api/runs/", {"ordering": "password"}, "ordering"),
        ("/api/runs/", {"ordering": "-queued_at,nope"}, "ordering"),
        ("/api/quota-changes/", {"ordering": "created_by__password"}, "ordering"),
        ("/api/sources/", {"ordering": "token"}, "ordering"),
    ],
)
def test_junk_paging_and_ordering_are_a_400(
    stored: models.ClusterSnapshot, viewer: Any, path: str, params: dict[str, str], field: str
) -> None:
    response = _client(viewer).get(path, params)
    assert response.status_code == 400, response.content[:500]
    assert field in response.json(), response.json()


def test_valid_paging_and_ordering_still_answer(
    stored: models.ClusterSnapshot, viewer: Any
) -> None:
    client = _client(viewer)
    for path, params in (
        ("/api/runs/", {"page": "1", "page_size": "500", "ordering": "-queued_at,id"}),
        ("/api/snapshots/", {"page": "1", "ordering": "captured_at"}),
        ("/api/partitions/", {}),
    ):
        assert client.get(path, params).status_code == 200, (path, params)


# ------------------------------------------------------------------ idempotency keys


@pytest.mark.parametrize(
    ("path", "first", "second"),
    [
        ("/api/rounds/", {}, {"max_preempted": {"vcore": 1000}}),
        (
            "/api/whatif/quota/",
            {"queue": "root.a", "new_max": {"vcore": 4000}},
            {"queue": "root.a", "new_max": {"vcore": 3000}},
        ),
        (
            "/api/whatif/quota/",
            {"queue": "root.a", "new_max": {"vcore": 4000}},
            {"queue": "root.b", "new_max": {"vcore": 4000}},
        ),
    ],
)
def test_same_idempotency_key_with_another_body_is_a_409_naming_the_key(
    stored: models.ClusterSnapshot,
    staff: Any,
    path: str,
    first: dict[str, Any],
    second: dict[str, Any],
) -> None:
    client = _client(staff)
    key = {"idempotency_key": "k-123", "snapshot": stored.pk}
    created = client.post(path, {**first, **key}, format="json")
    assert created.status_code in (201, 202), created.content[:500]
    again = client.post(path, {**first, **key}, format="json")
    assert again.json()["id"] == created.json()["id"]  # the same request: the same run
    before = db_counts()
    conflict = client.post(path, {**second, **key}, format="json")
    assert conflict.status_code == 409, conflict.content[:500]
    message = " ".join(conflict.json()["idempotency_key"])
    assert "k-123" in message
    assert db_counts() == before


@pytest.mark.parametrize("delay", [float("nan"), float("inf"), 1e10, 1e-300, -1, True, "5m"])
def test_the_service_refuses_the_delays_the_api_refuses(
    stored: models.ClusterSnapshot, staff: Any, delay: Any
) -> None:
    """Callers other than the API (pages, tasks, shell) meet the same rule."""
    from dashboard import services

    partition = models.Partition.objects.get(name="default")
    before = db_counts()
    with pytest.raises(services.ServiceError) as info:
        services.schedule_quota_change(partition, "root.a", new_delay=delay, user=staff)
    assert info.value.field == "new_delay"
    assert db_counts() == before


@pytest.mark.parametrize("body", [b"null", b"[]", b"7", b'"text"'])
@pytest.mark.parametrize(
    "path", ["/api/plans/", "/api/plans/keep/", "/api/plans/schedule/", "/api/plans/handback/"]
)
def test_a_json_body_that_is_not_an_object_is_a_400(
    stored: models.ClusterSnapshot, staff: Any, path: str, body: bytes
) -> None:
    """Found by the schemathesis suite: ``null`` as the body of a plan answered 500."""
    before = db_counts()
    response = _client(staff).post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:500]
    assert db_counts() == before
