"""Read caches: answers kept per process, and a write followed by a read shows the write.

- snapshot row lists of the API (kept per snapshot: a stored snapshot never changes);
- run, quota change and alert lists of the API (kept per data version: every committed
  write to a table they read changes the key, bulk updates included);
- the tree page's rows and timers (kept per snapshot and waiting changes), the queue
  page's tables (per snapshot, queue, filter, sort, page and scope);
- the index of allocation spans by queue (migration 0014).
"""

from __future__ import annotations

from typing import Any

import factories
import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from dashboard import dataversion, models, services
from dashboard.pages import data

T0 = factories.T0


def _queries(client: Any, path: str, **params: Any) -> tuple[Any, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, params)
    assert response.status_code == 200, response.content
    return response, len(captured.captured_queries)


def _store(captured_at: Any = T0, extra_queue: str | None = None) -> models.ClusterSnapshot:
    scenario = factories.small_scenario()
    if extra_queue:
        scenario["queues"]["children"].append({"name": extra_queue})
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=captured_at,
        scenario=scenario,
    )


# --------------------------------------------------------------------------- snapshot rows


@pytest.mark.django_db
def test_snapshot_rows_are_kept_per_snapshot(viewer_client: APIClient) -> None:
    """The second read of a snapshot's queues is the same body without the row queries;
    another snapshot (a new import) answers its own rows."""
    first = _store()
    url = f"/api/snapshots/{first.pk}/queues/"
    cold, cold_queries = _queries(viewer_client, url, page_size=2)
    warm, warm_queries = _queries(viewer_client, url, page_size=2)
    assert warm.content == cold.content
    assert warm["Content-Type"] == "application/json"
    assert warm_queries < cold_queries  # no count, no rows: the snapshot's lookup only
    assert cold.json()["next"].endswith("page=2&page_size=2")  # links built per URL

    second = _store(T0.replace(hour=11), extra_queue="c")
    answer = viewer_client.get(f"/api/snapshots/{second.pk}/queues/").json()
    paths = [r["path"] for r in answer["results"]]
    assert "root.c" in paths
    paths = [r["path"] for r in viewer_client.get(url).json()["results"]]
    assert "root.c" not in paths

    # a page out of range stays a 404 (never kept), a deleted snapshot a 404
    assert viewer_client.get(url, {"page": 99}).status_code == 404
    models.ClusterSnapshot.objects.filter(pk=first.pk).delete()
    assert viewer_client.get(url, {"page_size": 2}).status_code == 404


@pytest.mark.django_db
def test_allocations_of_a_queue_read_from_the_kept_page(viewer_client: APIClient) -> None:
    snapshot = _store()
    url = f"/api/snapshots/{snapshot.pk}/allocations/"
    x = viewer_client.get(url, {"queue": "root.a.x"}).json()
    y = viewer_client.get(url, {"queue": "root.a.y"}).json()
    assert {a["queue"] for a in x["results"]} == {"root.a.x"}
    assert {a["queue"] for a in y["results"]} == {"root.a.y"}
    assert viewer_client.get(url, {"queue": "root.a.x"}).json() == x


# --------------------------------------------------------------------------- data versions


def test_versions_change_with_each_committed_write(transactional_db: None) -> None:
    """Insert, update (bulk too), delete each change the table's version; other tables
    keep theirs; inside a transaction there is no version to key by."""
    before = dataversion.versions(["dashboard_alert", "dashboard_cluster"])
    assert before is not None
    alert = factories.make_alert()
    after_insert = dataversion.versions(["dashboard_alert", "dashboard_cluster"])
    assert after_insert is not None
    assert after_insert[0] != before[0]
    assert after_insert[1] == before[1]
    models.Alert.objects.filter(pk=alert.pk).update(message="changed")  # no signals
    after_update = dataversion.versions(["dashboard_alert"])
    assert after_update is not None
    assert after_update[0] != after_insert[0]
    alert.delete()
    after_delete = dataversion.versions(["dashboard_alert"])
    assert after_delete is not None
    assert after_delete[0] != after_update[0]
    with transaction.atomic():
        assert dataversion.versions(["dashboard_alert"]) is None
    with pytest.raises(ValueError, match="dashboard_snapshotqueue"):
        dataversion.versions(["dashboard_snapshotqueue"])


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_quota_change_list_shows_a_new_change(transactional_db: None) -> None:
    """Read, read again (kept: fewer queries), write through the API, read: the new change."""
    _store()
    models.Partition.objects.update(timer_rules="seed")  # a max newly set: seed starts a timer
    client = _api(factories.UserFactory.create(is_staff=True))
    url = "/api/quota-changes/"
    first, cold = _queries(client, url, partition="default")
    again, warm = _queries(client, url, partition="default")
    assert again.content == first.content
    assert warm < cold  # the body was kept
    created = client.post(
        url,
        {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 5000}},
        format="json",
    )
    assert created.status_code == 201, created.content
    listed = client.get(url, {"partition": "default"}).json()
    assert listed["count"] == first.json()["count"] + 1
    assert created.json()["id"] in [c["id"] for c in listed["results"]]
    # a cancel (an update of the row) shows at once too
    client.post(f"{url}{created.json()['id']}/cancel/")
    states = {c["id"]: c["state"] for c in client.get(url).json()["results"]}
    assert states[created.json()["id"]] == "cancelled"


def test_alert_list_shows_an_acknowledgement(transactional_db: None) -> None:
    staff = factories.UserFactory.create(is_staff=True)
    client = _api(staff)
    alert = factories.make_alert("disk")
    unread = client.get("/api/alerts/", {"acknowledged": "false"}).json()
    assert [a["id"] for a in unread["results"]] == [alert.pk]
    assert client.get("/api/alerts/", {"acknowledged": "false"}).json() == unread
    assert client.post(f"/api/alerts/{alert.pk}/acknowledge/").status_code == 200
    assert client.get("/api/alerts/", {"acknowledged": "false"}).json()["count"] == 0
    # the acknowledging user's name, from another table, follows a rename
    listed = client.get("/api/alerts/").json()["results"]
    assert listed[0]["acknowledged_by"] == staff.username
    get_user_model().objects.filter(pk=staff.pk).update(username="renamed")
    assert client.get("/api/alerts/").json()["results"][0]["acknowledged_by"] == "renamed"


def test_run_list_shows_a_status_set_by_a_bulk_update(transactional_db: None) -> None:
    """A run's status set by ``QuerySet.update`` (as the workers claim and finish runs:
    no model signal) shows in the next read of the kept list."""
    snapshot = _store()
    client = _api(factories.UserFactory.create())
    run = factories.make_run(snapshot, status=models.PreemptionRun.Status.PENDING)
    first = client.get("/api/runs/").json()
    assert [(r["id"], r["status"]) for r in first["results"]] == [(run.pk, "pending")]
    assert client.get("/api/runs/").json() == first
    models.PreemptionRun.objects.filter(pk=run.pk).update(status=models.PreemptionRun.Status.DONE)
    assert client.get("/api/runs/").json()["results"][0]["status"] == "done"


@pytest.mark.django_db
def test_lists_are_built_afresh_inside_a_transaction(staff_client: APIClient) -> None:
    """In a transaction (as every test on ``db`` is) a list is never read from a kept body:
    a write of the same transaction is not counted in a version until it commits."""
    factories.make_alert("one")
    assert staff_client.get("/api/alerts/").json()["count"] == 1
    factories.make_alert("two")
    assert staff_client.get("/api/alerts/").json()["count"] == 2


# --------------------------------------------------------------------------- pages


def _page(user: Any, name: str, **params: Any) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse(name), params)
    assert response.status_code == 200
    return str(response.content.decode())


@pytest.mark.django_db
def test_tree_page_shows_a_new_waiting_change_then_its_cancellation(viewer: Any) -> None:
    snapshot = _store()
    snapshot.partition.timer_rules = "seed"  # a max newly set: seed starts a timer
    snapshot.partition.save(update_fields=["timer_rules"])
    before = _page(viewer, "tree")
    assert "Timers running" not in before
    change = services.schedule_quota_change(
        snapshot.partition, "root.a.x", new_max={"vcore": 500}, new_delay=3600
    )
    waiting = _page(viewer, "tree")
    assert "Timers running" in waiting
    assert 'class="mono">root.a.x</a> → ' in waiting
    # made here, not yet in the cluster's config: the list says the timer is a prediction
    assert 'data-testid="timer-planned"' in waiting
    assert "so the timer is the dashboard's prediction" in waiting
    models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=change.changed_at)
    applied = _page(viewer, "tree")  # the cluster's config shows it now: the scheduler's
    assert 'class="mono">root.a.x</a> → ' in applied
    assert 'data-testid="timer-planned"' not in applied
    # and the tree's hover of root.a.x (kept per process, keyed by the waiting changes)
    assert "(planned here)" in waiting
    assert "(planned here)" not in applied
    assert "(in the cluster" in applied
    row = {r.path: r for r in data.queue_rows(snapshot)}["root.a.x"]
    assert row.lowered_max == {"vcore": 500}
    one = data.queue_row(snapshot, "root.a.x")  # the queue page: that queue's change only
    assert one is not None
    assert one.lowered_max == {"vcore": 500}
    services.cancel_quota_change(change)
    assert "Timers running" not in _page(viewer, "tree")


@pytest.mark.django_db
def test_queue_page_tables_keep_each_scope_and_page(viewer: Any) -> None:
    """The kept table rows are per scope (their links carry it) and per filter."""
    older = _store()
    latest = _store(T0.replace(hour=11))
    plain = _page(viewer, "queue", queue="root.a.x")
    pinned = _page(viewer, "queue", queue="root.a.x", snapshot=older.pk)
    assert f"snapshot={older.pk}&amp;app=app-1" in pinned
    assert f"snapshot={latest.pk}&amp;app=app-1" in plain
    assert f"snapshot={older.pk}&amp;app=app-1" not in plain
    assert plain.count('<span class="mono alloc-key">k') == 4  # k1, k3, k5, k7 in root.a.x
    filtered = _page(viewer, "queue", queue="root.a.x", q="k3")
    assert filtered.count('<span class="mono alloc-key">k') == 1
    again = _page(viewer, "queue", queue="root.a.x")
    table = 'data-testid="allocations"'
    assert again.split(table)[1] == plain.split(table)[1]  # the kept rows, as first built


def test_history_page_shows_a_new_run_and_its_status(transactional_db: None) -> None:
    """The history's runs part is kept while no run changes: a new run, then its status
    set by a bulk update, show in the next read."""
    snapshot = _store()
    viewer = factories.UserFactory.create()
    first = factories.make_run(snapshot)
    page = _page(viewer, "history")
    assert f"#{first.pk}</a>" in page
    assert (
        _page(viewer, "history").split('id="history-live"')[1] == page.split('id="history-live"')[1]
    )
    second = factories.make_run(snapshot, status=models.PreemptionRun.Status.PENDING)
    page = _page(viewer, "history")
    assert f"#{second.pk}</a>" in page
    assert "data-live-active" in page  # a run in progress
    models.PreemptionRun.objects.filter(pk=second.pk).update(
        status=models.PreemptionRun.Status.DONE
    )
    assert "data-live-active" not in _page(viewer, "history")


def test_alert_page_shows_an_acknowledgement_and_keeps_the_readers_parts(
    transactional_db: None,
) -> None:
    """The feed is kept per data version, but the acknowledge button (with the reader's
    CSRF token) is a staff reader's only, and an acknowledgement shows at once."""
    staff = factories.UserFactory.create(is_staff=True)
    viewer = factories.UserFactory.create()
    alert = factories.make_alert("<b>disk</b> full")
    as_staff = _page(staff, "alerts")
    as_viewer = _page(viewer, "alerts")
    assert f'data-alert-id="{alert.pk}"' in as_staff
    assert f'data-alert-id="{alert.pk}"' in as_viewer
    assert "&lt;b&gt;disk&lt;/b&gt; full" in as_viewer  # escaped
    assert 'data-testid="ack"' in as_staff
    assert 'name="csrfmiddlewaretoken"' in as_staff.split('data-testid="alert-feed"')[1]
    assert 'data-testid="ack"' not in as_viewer
    services.acknowledge_alert(alert, user=staff)
    after = _page(staff, "alerts")
    assert f"acknowledged by {staff.username} 0" in after  # "0 minutes ago"
    assert 'data-testid="ack"' not in after


# --------------------------------------------------------------------------- index


@pytest.mark.django_db
def test_allocation_spans_have_an_index_by_queue() -> None:
    """Migration 0016's index (partition, queue); on PostgreSQL the queue page's query
    (``queue = path OR queue LIKE 'path.%'``) can use it (varchar_pattern_ops)."""
    table = models.AllocationSpan._meta.db_table
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    assert found["alloc_span_queue"]["columns"] == ["partition_id", "queue"]
    assert found["alloc_span_queue"]["index"]
    if connection.vendor == "postgresql":
        snapshot = _store()
        qs = services.snapshot_allocations(snapshot).filter(data.subtree_filter("queue", "root.a"))
        with connection.cursor() as cursor:
            # Only this index or a scan of the table can serve the query: the others
            # (which also lead with the partition) are dropped inside the test's
            # transaction, so the planner's choice no longer depends on the statistics
            # other tests left behind.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no pending trigger events
            cursor.execute(
                "SELECT i.indexname, c.conname FROM pg_indexes i LEFT JOIN pg_constraint c"
                " ON c.conname = i.indexname WHERE i.tablename = %s",
                [table],
            )
            for index, constraint in cursor.fetchall():
                if index == "alloc_span_queue" or index.endswith("_pkey"):
                    continue
                if constraint:
                    cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{constraint}"')
                else:
                    cursor.execute(f'DROP INDEX "{index}"')
            cursor.execute(f"ANALYZE {table}")
            cursor.execute("SET LOCAL enable_seqscan = off")
        assert "alloc_span_queue" in qs.explain()
