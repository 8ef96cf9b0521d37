"""REST API: authentication, permissions, CSRF, schema, and the write paths end to end.

Runs here are evaluated in the request (``wait``) or by an eager Celery task;
the real worker is exercised by tests/integration.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import factories
import pytest
from django.http import HttpRequest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from dashboard import models

READ_URLS = [
    "/api/partitions/",
    "/api/configs/",
    "/api/snapshots/",
    "/api/quota-changes/",
    "/api/runs/",
    "/api/rounds/",
    "/api/alerts/",
    "/api/alerts/unread/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", READ_URLS)
def test_anonymous_reads_are_refused(anon_client: APIClient, url: str) -> None:
    assert anon_client.get(url).status_code in (401, 403)


@pytest.mark.django_db
@pytest.mark.parametrize("url", READ_URLS)
def test_authenticated_users_can_read(viewer_client: APIClient, url: str) -> None:
    assert viewer_client.get(url).status_code == 200


@pytest.mark.django_db
def test_anonymous_write_is_refused(
    anon_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    """Session auth comes first (no browser Basic pop-up), so DRF answers 403, not 401."""
    response = anon_client.post(
        "/api/whatif/preempt/", {"snapshot": snapshot.pk, "ask_key": "ask-1"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "not_authenticated"
    assert models.PreemptionRun.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/whatif/preempt/", {"ask_key": "ask-1", "wait": True}),
        ("/api/whatif/quota/", {"queue": "root.a", "new_max": {"vcore": 5000}, "wait": True}),
        ("/api/rounds/", {"wait": True}),
        ("/api/quota-changes/", {"partition": "default", "queue_path": "root.a", "new_max": {}}),
    ],
)
def test_non_staff_writes_are_forbidden(
    viewer_client: APIClient, snapshot: models.ClusterSnapshot, url: str, body: dict[str, Any]
) -> None:
    response = viewer_client.post(url, {"snapshot": snapshot.pk, **body}, format="json")
    assert response.status_code == 403
    assert models.PreemptionRun.objects.count() == 0
    assert models.QuotaChange.objects.count() == 0


@pytest.mark.django_db
def test_non_staff_cannot_upload_or_acknowledge(viewer_client: APIClient) -> None:
    alert = factories.AlertFactory.create()
    assert viewer_client.post(f"/api/alerts/{alert.pk}/acknowledge/").status_code == 403
    response = viewer_client.post("/api/snapshots/", factories.small_scenario(), format="json")
    assert response.status_code == 403
    assert models.ClusterSnapshot.objects.count() == 0


@pytest.mark.django_db
def test_session_writes_need_the_csrf_token(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """A logged-in session without the CSRF token is refused; with the token it works."""
    client = APIClient(enforce_csrf_checks=True)
    client.login(request=HttpRequest(), username=staff.username, password="pw-for-tests")
    body = {"snapshot": snapshot.pk, "ask_key": "ask-1", "wait": True}
    refused = client.post("/api/whatif/preempt/", body, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert models.PreemptionRun.objects.count() == 0
    # fetch a token the way a page would: the cookie set by a rendered form
    browser = Client(enforce_csrf_checks=True)
    browser.login(request=HttpRequest(), username=staff.username, password="pw-for-tests")
    browser.get("/admin/")
    token = browser.cookies["csrftoken"].value
    client.cookies["csrftoken"] = token
    accepted = client.post("/api/whatif/preempt/", body, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.content


@pytest.mark.django_db
def test_token_and_basic_auth_need_no_csrf(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    client = APIClient(enforce_csrf_checks=True)
    response = client.post(
        "/api/auth/token/", {"username": staff.username, "password": "pw-for-tests"}
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=staff).key == token
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    body = {"snapshot": snapshot.pk, "ask_key": "ask-1", "wait": True}
    assert client.post("/api/whatif/preempt/", body, format="json").status_code == 201


@pytest.mark.django_db
def test_schema_is_valid_openapi(viewer_client: APIClient) -> None:
    response = viewer_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/runs/", "/api/quota-changes/", "/api/whatif/preempt/", "/api/alerts/"):
        assert path in schema["paths"]
    from drf_spectacular.validation import validate_schema

    validate_schema(schema)  # type: ignore[no-untyped-call]  # drf-spectacular leaves it untyped


@pytest.mark.django_db
def test_swagger_ui_assets_are_served_locally(viewer: Any) -> None:
    client = APIClient()
    client.force_login(viewer)  # a browser's session: the docs page needs a sign-in
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    # Every script and stylesheet comes from this server: a relative address, never a
    # scheme or a protocol-relative host. (Matching the word "cdn" in the page once
    # failed on a CSRF token that happened to contain it.)
    assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    assert any("swagger-ui" in asset for asset in assets)
    for asset in assets:
        assert asset.startswith("/"), asset
        assert not asset.startswith("//"), asset
    assert not re.search(r"https?://", html), "the docs page names an outside host"


@pytest.mark.django_db
def test_whatif_preempt_for_a_pending_ask(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    response = staff_client.post(
        "/api/whatif/preempt/",
        {"snapshot": snapshot.pk, "ask_key": "ask-1", "wait": True},
        format="json",
    )
    assert response.status_code == 201, response.content
    run = response.json()
    assert (run["status"], run["outcome"], run["kind"]) == ("done", "preempted", "whatif_preempt")
    assert [v["allocation_key"] for v in run["victims"]] == run["result"]["victims"]
    assert {v["node"] for v in run["victims"]} == {"n1"}


@pytest.mark.django_db
def test_whatif_preempt_for_a_typed_ask_through_the_task(
    staff_client: APIClient,
    snapshot: models.ClusterSnapshot,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Without ``wait`` the run is queued (202) and the task stores the answer."""
    ask = {"key": "typed", "queue": "root.b", "resources": {"vcore": 1000}}
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/api/whatif/preempt/", {"snapshot": snapshot.pk, "ask": ask}, format="json"
        )
    assert response.status_code == 202
    run = models.PreemptionRun.objects.get(pk=response.json()["id"])
    assert (run.status, run.outcome) == ("done", "fits")


@pytest.mark.django_db
def test_bad_whatif_input_is_400_naming_the_field(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"ask_key": "nope"}, "ask_key"),
        ({"ask": {"key": "a", "queue": "root.zzz", "resources": {"vcore": 1}}}, "ask.queue"),
        (
            {"ask": {"key": "a", "queue": "root.b", "resources": {"vcore": -1}}},
            "ask.resources.vcore",
        ),
        ({}, "ask"),
    ]
    for body, field in cases:
        response = staff_client.post(
            "/api/whatif/preempt/", {"snapshot": snapshot.pk, **body}, format="json"
        )
        assert response.status_code == 400, body
        assert field in response.json(), response.json()
    response = staff_client.post(
        "/api/whatif/quota/",
        {"snapshot": snapshot.pk, "queue": "root.a", "new_max": {"vcore": "lots"}},
        format="json",
    )
    assert response.status_code == 400
    assert "new_max.vcore" in response.json()
    assert models.PreemptionRun.objects.count() == 0


@pytest.mark.django_db
def test_idempotency_key_returns_the_first_run(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    body = {"snapshot": snapshot.pk, "ask_key": "ask-1", "idempotency_key": "k-1", "wait": True}
    first = staff_client.post("/api/whatif/preempt/", body, format="json").json()
    second = staff_client.post("/api/whatif/preempt/", body, format="json").json()
    assert first["id"] == second["id"]
    assert models.PreemptionRun.objects.count() == 1


@pytest.mark.django_db
def test_quota_plan_and_round(staff_client: APIClient, snapshot: models.ClusterSnapshot) -> None:
    plan = staff_client.post(
        "/api/whatif/quota/",
        {"snapshot": snapshot.pk, "queue": "root.a", "new_max": {"vcore": 5000}, "wait": True},
        format="json",
    ).json()
    assert (plan["outcome"], plan["target"]) == ("enforced", {"vcore": 3000})
    assert {v["leaf"] for v in plan["victims"]} <= {"root.a.x", "root.a.y"}
    round_run = staff_client.post(
        "/api/rounds/", {"snapshot": snapshot.pk, "wait": True}, format="json"
    ).json()
    assert round_run["kind"] == "round"
    assert round_run["outcome"] == "preempted"
    assert [r["ask"] for r in round_run["result"]["results"]] == ["ask-1"]


@pytest.mark.django_db
def test_run_history_filters_paginates_and_exports_csv(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    for i in range(3):
        factories.PreemptionRunFactory.create(
            snapshot=snapshot, queue="root.b", outcome="preempted"
        )
        factories.PreemptionRunFactory.create(
            snapshot=snapshot,
            queue=f"root.a.x{i}",
            kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
            trigger=models.PreemptionRun.Trigger.TIMER,
            outcome="best_effort",
        )
    factories.PreemptionRunFactory.create(snapshot=snapshot, queue="=cmd|evil", outcome="fits")
    page = staff_client.get("/api/runs/", {"page_size": 2}).json()
    assert page["count"] == 7
    assert len(page["results"]) == 2
    assert page["next"]
    by_kind = staff_client.get("/api/runs/", {"kind": "quota_enforcement"}).json()
    assert {r["queue"] for r in by_kind["results"]} == {"root.a.x0", "root.a.x1", "root.a.x2"}
    by_trigger = staff_client.get("/api/runs/", {"trigger": "timer", "outcome": "best_effort"})
    assert by_trigger.json()["count"] == 3
    assert staff_client.get("/api/runs/", {"queue": "root.b"}).json()["count"] == 3
    assert staff_client.get("/api/runs/", {"queue_prefix": "root.a"}).json()["count"] == 3
    dates = {"queued_after": "2026-09-01T09:00:00Z", "queued_before": "2026-09-01T11:00:00Z"}
    assert staff_client.get("/api/runs/", dates).json()["count"] == 7
    assert (
        staff_client.get("/api/runs/", {"queued_after": "2026-09-02T00:00:00Z"}).json()["count"]
        == 0
    )
    response = staff_client.get("/api/runs/export/", {"outcome": "fits"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][0] == "id"
    assert len(rows) == 2
    assert rows[1][rows[0].index("queue")] == "'=cmd|evil"


@pytest.mark.django_db
def test_run_list_counts_victims_in_one_query_per_page(
    staff_client: APIClient,
    snapshot: models.ClusterSnapshot,
    django_assert_max_num_queries: Any,
) -> None:
    """victim_count is annotated, not counted per run: the page costs the same for 1 or 12."""
    expected = {}
    for n in range(12):
        run = factories.PreemptionRunFactory.create(snapshot=snapshot, queue="root.b")
        for i in range(n % 4):
            models.RunVictim.objects.create(run=run, position=i, allocation_key=f"r{n}-k{i}")
        expected[run.pk] = n % 4
    staff_client.get("/api/runs/")  # session and user loaded once
    with django_assert_max_num_queries(6):
        page = staff_client.get("/api/runs/", {"page_size": 50}).json()
    assert {r["id"]: r["victim_count"] for r in page["results"]} == expected
    one = next(pk for pk, n in expected.items() if n == 3)
    assert staff_client.get(f"/api/runs/{one}/").json()["victim_count"] == 3


@pytest.mark.django_db
def test_run_detail_lists_victims(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    run_id = staff_client.post(
        "/api/whatif/preempt/",
        {"snapshot": snapshot.pk, "ask_key": "ask-1", "wait": True},
        format="json",
    ).json()["id"]
    detail = staff_client.get(f"/api/runs/{run_id}/").json()
    assert detail["victims"]
    assert {"allocation_key", "queue", "node", "resources", "leaf"} <= set(detail["victims"][0])


@pytest.mark.django_db
def test_quota_change_create_edit_cancel(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    # rule set seed: root.a has no max, and a max newly set is a decrease there (under
    # scheduler, yunikorn-core counts it as a raise: no timer; docs/user/timers.md)
    models.Partition.objects.update(timer_rules="seed")
    created = staff_client.post(
        "/api/quota-changes/",
        {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 5000}},
        format="json",
    )
    assert created.status_code == 201, created.content
    change = created.json()
    assert change["state"] == "waiting"
    edited = staff_client.patch(
        f"/api/quota-changes/{change['id']}/", {"new_delay": "2m"}, format="json"
    )
    assert edited.status_code == 200, edited.content
    new = edited.json()
    assert (new["state"], new["delay"], new["new_max"]) == ("waiting", 120.0, {"vcore": 5000})
    assert staff_client.get(f"/api/quota-changes/{change['id']}/").json()["state"] == "reset"
    cancelled = staff_client.post(f"/api/quota-changes/{new['id']}/cancel/")
    assert cancelled.json()["state"] == "cancelled"
    again = staff_client.post(f"/api/quota-changes/{new['id']}/cancel/")
    assert again.status_code == 400
    assert "state" in again.json()
    listed = staff_client.get("/api/quota-changes/", {"queue": "root.a"}).json()
    assert listed["count"] == 2


@pytest.mark.django_db
def test_quota_change_errors_name_the_field(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    cases = [
        ({"partition": "default", "queue_path": "root.zzz", "new_max": {"vcore": 1}}, "queue_path"),
        ({"partition": "nope", "queue_path": "root.a", "new_max": {"vcore": 1}}, "partition"),
        ({"partition": "default", "queue_path": "root.a"}, "new_max"),
        ({"partition": "default", "queue_path": "root.a", "new_delay": "soon"}, "new_delay"),
    ]
    for body, field in cases:
        response = staff_client.post("/api/quota-changes/", body, format="json")
        assert response.status_code == 400, body
        assert field in response.json(), response.json()


@pytest.mark.django_db
def test_alert_feed_unread_count_and_acknowledge(staff_client: APIClient, staff: Any) -> None:
    alerts = [factories.AlertFactory.create() for _ in range(3)]
    assert staff_client.get("/api/alerts/unread/").json() == {"unread": 3}
    acked = staff_client.post(f"/api/alerts/{alerts[0].pk}/acknowledge/").json()
    assert acked["acknowledged_by"] == staff.username
    assert staff_client.get("/api/alerts/unread/").json() == {"unread": 2}
    assert staff_client.get("/api/alerts/", {"acknowledged": "false"}).json()["count"] == 2
    assert staff_client.post("/api/alerts/acknowledge-all/").json() == {"unread": 0}


@pytest.mark.django_db
def test_snapshot_subresources_and_export(
    staff_client: APIClient, snapshot: models.ClusterSnapshot
) -> None:
    base = f"/api/snapshots/{snapshot.pk}"
    queues = staff_client.get(f"{base}/queues/").json()
    assert [q["path"] for q in queues["results"]][:2] == ["root", "root.a"]
    assert staff_client.get(f"{base}/nodes/").json()["results"][0]["node_id"] == "n1"
    allocs = staff_client.get(f"{base}/allocations/", {"queue": "root.a.x"}).json()
    assert allocs["count"] == 4
    assert staff_client.get(f"{base}/asks/").json()["results"][0]["key"] == "ask-1"
    doc = staff_client.get(f"{base}/export/", {"ask": "ask-1"}).json()
    assert doc["request"]["type"] == "preempt"
    bad = staff_client.get(f"{base}/export/", {"quota": "root.a"})
    assert bad.status_code == 400
    assert "quota" in bad.json()


@pytest.mark.django_db
def test_config_endpoints(staff_client: APIClient, fixtures_dir: Any) -> None:
    for name in ("queues-nested-gpu.yaml", "queues-nested-gpu-proposed.yaml"):
        with (fixtures_dir / "config" / name).open("rb") as fh:
            assert (
                staff_client.post("/api/configs/", {"file": fh}, format="multipart").status_code
                == 201
            )
    versions = staff_client.get("/api/configs/", {"partition": "default"}).json()["results"]
    newest = versions[0]["id"]
    diff = staff_client.get(f"/api/configs/{newest}/diff/").json()
    assert any(c["queue"] == "root.batch" for c in diff)
    detail = staff_client.get(f"/api/configs/{newest}/").json()
    assert any(q["path"] == "root.research.nlp" for q in detail["queues"])
    exported = staff_client.get(f"/api/configs/{newest}/export/")
    assert exported.status_code == 200
    assert b"partitions:" in exported.content
    cm = staff_client.get(f"/api/configs/{newest}/export/", {"form": "configmap"})
    assert b"kind: ConfigMap" in cm.content


@pytest.mark.django_db
def test_token_endpoint_is_rate_limited(staff: Any) -> None:
    """Five wrong passwords lock the username on this address: then even the right one gets 429."""
    client = APIClient()
    wrong = {"username": staff.username, "password": "nope"}
    assert [client.post("/api/auth/token/", wrong).status_code for _ in range(5)] == [400] * 5
    right = {"username": staff.username, "password": "pw-for-tests"}
    locked = client.post("/api/auth/token/", right)
    assert locked.status_code == 429
    assert "token" not in locked.json()
