"""Two clusters tried as a new administrator would: acme-ml (the shared fixtures) and
lab-west (data/cluster-b), both with partition ``default``.  Every alert names its
cluster, its links stay in that cluster, and the words keep the dashboard's predictions
apart from what the scheduler did."""

from __future__ import annotations

import csv
import html as html_mod
import io
import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient
from two_clusters import LAB_WEST, copy_rest, import_two, logged_in, manage

from dashboard import models, services

pytestmark = pytest.mark.django_db


@pytest.fixture
def two(fixtures_dir: Path, tmp_path: Path) -> dict[str, models.Partition]:
    """Both clusters' configs and REST folders (acme-ml's less its state dump), imported
    with the commands."""
    rest = copy_rest(fixtures_dir / "rest", tmp_path / "acme-rest", config=True)
    return import_two(fixtures_dir / "config" / "queues-small.yaml", rest)


def _alert_items(html: str) -> list[str]:
    return html.split('data-testid="alert" ')[1:]


def test_alerts_page_names_each_alerts_cluster_and_links_into_it(
    two: dict[str, models.Partition], viewer: Any
) -> None:
    acme, lab = two["acme-ml"], two["lab-west"]
    lab_alert = services.raise_alert(
        models.Alert.Kind.QUOTA, "root.reports: timer fired", partition=lab, queue="root.reports"
    )
    client = logged_in(viewer)
    # the nav link carries acme-ml's scope: the feed still shows every cluster's alerts
    html = client.get(reverse("alerts"), {"cluster": "acme-ml", "partition": "default"}).content
    text = html.decode()
    assert "acme-ml / default" in text
    assert "lab-west / default" in text
    (item,) = [i for i in _alert_items(text) if f'data-alert-id="{lab_alert.pk}"' in i]
    assert '<span class="mono" data-testid="alert-where" title="cluster / partition">' in item
    assert "lab-west / default" in item
    # its queue and change links lead to lab-west's default, not the acme-ml one in view
    hrefs = [html_mod.unescape(h.split('"')[0]) for h in item.split('href="')[1:]]
    queue_link = next(h for h in hrefs if h.startswith(reverse("queue")))
    assert parse_qs(urlsplit(queue_link).query) == {
        "cluster": ["lab-west"],
        "partition": ["default"],
        "queue": ["root.reports"],
    }
    page = client.get(queue_link)
    assert page.status_code == 200
    assert page.context["scope"].partition == lab
    # one cluster's alerts only
    only = client.get(reverse("alerts"), {"from_cluster": "lab-west"}).content.decode()
    assert _alert_items(only)
    assert all("lab-west / default" in i for i in _alert_items(only))
    assert acme.alerts.exists()


def test_alert_kinds_keep_predicted_and_observed_apart() -> None:
    labels = dict(models.Alert.Kind.choices)
    assert labels[models.Alert.Kind.QUOTA] == "Quota timer fired (predicted)"
    assert labels[models.Alert.Kind.QUOTA_OBSERVED] == "Quota preemption observed (scheduler)"
    assert not any("enforce" in label.lower() for label in labels.values())


def test_the_shared_folder_as_it_is_keeps_the_schedulers_preemptions(fixtures_dir: Path) -> None:
    """The shared REST folder holds the state dump and the events batch: the dump is used
    and the events beside it still become observed runs (as with the REST answers alone)."""
    out = StringIO()
    call_command(
        "import_snapshot",
        str(fixtures_dir / "rest"),
        "--cluster",
        "acme-ml",
        stdout=out,
        stderr=out,
    )
    assert "events_batch.json" not in out.getvalue()
    (snap,) = models.ClusterSnapshot.objects.all()
    assert snap.source_kind == "state_dump"
    observed = models.PreemptionRun.objects.filter(trigger="observed").order_by("queued_at")
    assert [(r.kind, r.queue) for r in observed] == [
        ("preempt", "root.production.training"),
        ("quota", "root.batch"),
    ]
    quota = observed.get(kind="quota")
    assert sorted(quota.victims.values_list("allocation_key", flat=True)) == [
        "61c627cf-f498-5eca-8f51-53dad0540f7c",
        "9fc30366-04e6-5707-ba1c-345ee30643cf",
    ]
    assert models.ObservedMaxChange.objects.filter(queue="root.batch").count() == 1


def test_runs_csv_names_the_cluster_and_the_outcome_in_words(
    two: dict[str, models.Partition], viewer: Any
) -> None:
    """Both clusters' partition is ``default``: each CSV row says its cluster; the
    outcome in words says observed (the scheduler's) apart from the engine's value."""
    client = logged_in(viewer)
    response = client.get(reverse("history_csv"), {"cluster": "lab-west", "partition": "default"})
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows
    assert {r["cluster"] for r in rows} == {"lab-west"}
    assert {r["outcome_text"] for r in rows} == {"observed: preempted"}
    everything = client.get("/api/runs/export/")
    rows = list(csv.DictReader(io.StringIO(everything.content.decode())))
    assert {(r["cluster"], r["partition"]) for r in rows} == {
        ("acme-ml", "default"),
        ("lab-west", "default"),
    }
    # a predicted run's "enforced" happened nowhere: its words say so
    acme = two["acme-ml"]
    run = models.PreemptionRun.objects.filter(partition=acme, trigger="observed").first()
    assert run is not None
    predicted = models.PreemptionRun.objects.create(
        partition=acme,
        snapshot=run.snapshot,
        kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        trigger=models.PreemptionRun.Trigger.TIMER,
        status=models.PreemptionRun.Status.DONE,
        queue="root.batch",
        outcome="enforced",
        queued_at=run.queued_at,
    )
    rows = list(csv.DictReader(io.StringIO(client.get("/api/runs/export/").content.decode())))
    (row,) = [r for r in rows if r["id"] == str(predicted.pk)]
    assert row["outcome"] == "enforced"
    assert row["outcome_text"] == "predicted: target claimed in full"


def test_a_change_learned_before_the_events_is_applied_at_the_schedulers_time() -> None:
    """lab-west's three configs imported first (root.reports lowered twice: nothing tells
    when yet), then its REST answers: the waiting change's timer and its applied time are
    the scheduler's (13:58, quotaPreemptionStartTime 14:18 less the 20m delay), never the
    import."""
    for name in ("queues-v1", "queues-v2", "queues"):
        manage("import_config", str(LAB_WEST / "config" / f"{name}.yaml"), "--cluster", "lab-west")
    change = models.QuotaChange.objects.get(state=models.QuotaChange.State.WAITING)
    imported = change.applied_at
    assert change.clock_source == models.QuotaChange.ClockSource.CONFIG_IMPORT
    manage("import_snapshot", str(LAB_WEST / "rest"))
    change.refresh_from_db()
    start = datetime(2026, 10, 14, 13, 58, tzinfo=UTC)
    assert change.clock_source == models.QuotaChange.ClockSource.START_TIME
    assert change.changed_at == start
    assert change.applied_at == start
    assert imported is not None
    assert imported > start


def test_object_pages_name_the_cluster(two: dict[str, models.Partition], viewer: Any) -> None:
    """A run, change or config page of lab-west says lab-west, not only ``default``."""
    lab = two["lab-west"]
    client = logged_in(viewer)
    run = models.PreemptionRun.objects.filter(partition=lab).first()
    version = lab.configs.first()
    assert run is not None
    assert version is not None
    for url in (
        reverse("run", args=[run.pk]),
        reverse("config", args=[version.pk]),
        f"{reverse('tree')}?cluster=lab-west&partition=default",
        f"{reverse('configs')}?cluster=lab-west&partition=default",
    ):
        text = client.get(url).content.decode()
        assert "cluster lab-west · partition default" in text or (
            "cluster <strong>lab-west</strong>, partition <strong>default</strong>" in text
        ), url
    change = services.schedule_quota_change(
        lab, "root.sandbox", new_max={"vcore": 6000, "memory": 32 * 2**30}
    )
    text = client.get(reverse("change", args=[change.pk])).content.decode()
    assert "cluster lab-west · partition default" in text


def test_rest_answers_take_the_capture_time_given(fixtures_dir: Path) -> None:
    """lab-west's REST answers carry no capture time: --captured-at gives it (the
    snapshot's now), without it the command says the import time was taken."""
    err = StringIO()
    call_command("import_snapshot", str(LAB_WEST / "rest"), stdout=StringIO(), stderr=err)
    assert "carry no capture time" in err.getvalue()
    assert "--captured-at" in err.getvalue()
    err = StringIO()
    call_command(
        "import_snapshot",
        str(LAB_WEST / "rest"),
        "--captured-at",
        "2026-10-14T14:00:00Z",
        stdout=StringIO(),
        stderr=err,
    )
    assert "carry no capture time" not in err.getvalue()
    snap = models.ClusterSnapshot.objects.get(captured_at=datetime(2026, 10, 14, 14, tzinfo=UTC))
    assert services.snapshot_now(snap) == snap.captured_at.timestamp()
    assert snap.imported_at > snap.captured_at
    # answers carrying their own time (the state dump) refuse another
    dump = fixtures_dir / "rest" / "fullstatedump.json"
    with pytest.raises(CommandError, match="carry their capture time"):
        manage("import_snapshot", str(dump), "--captured-at", "2026-09-01T11:00:00Z")
    with pytest.raises(CommandError, match="no UTC offset"):
        manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "2026-10-14T14:00")
    with pytest.raises(CommandError, match="out of range"):
        manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "0001-01-01T00:00+01:00")
    with pytest.raises(CommandError, match="later than now"):
        manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "2999-01-01T00:00Z")


def test_max_in_force_after_the_scheduler_retimed_the_newest_change(viewer: Any) -> None:
    """lab-west: root.reports lowered to 12 cores (v2) then 11 (v3), the configs imported
    before the REST answers. The 11-core change is retimed to the scheduler's 13:58, earlier
    than the import that recorded the 12-core one: the max in force stays the snapshot's
    11 cores, not the replaced change's 12."""
    for name in ("queues-v1", "queues-v2", "queues"):
        manage("import_config", str(LAB_WEST / "config" / f"{name}.yaml"), "--cluster", "lab-west")
    manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "2026-10-14T14:00:00Z")
    old, new = models.QuotaChange.objects.filter(queue_path="root.reports").order_by("pk")
    assert old.state == models.QuotaChange.State.RESET
    # the replaced change as when no QUEUE_MAX event of its own is known: only the time
    # of the import that recorded it, later than the scheduler's time of its successor
    imported = datetime(2026, 11, 24, 11, tzinfo=UTC)
    models.QuotaChange.objects.filter(pk=old.pk).update(
        applied_at=imported, changed_at=imported, clock_source="config_import"
    )
    assert new.applied_at is not None
    assert new.applied_at < imported
    page = logged_in(viewer).get(
        reverse("queue"), {"cluster": "lab-west", "partition": "default", "queue": "root.reports"}
    )
    in_force = page.context["in_force"]
    assert in_force.max == {"vcore": 11000, "memory": 48 * 2**30}
    assert in_force.words.startswith("the snapshot's")


def test_a_change_before_any_snapshot_does_not_claim_usage_exceeds_the_max() -> None:
    """No snapshot yet: the timer starts (the usage is taken as above the new max), and its
    reason says the usage is not known rather than that it exceeds the max."""
    manage("import_config", str(LAB_WEST / "config" / "queues-v1.yaml"), "--cluster", "lab-west")
    out = manage(
        "import_config", str(LAB_WEST / "config" / "queues-v2.yaml"), "--cluster", "lab-west"
    )
    change = models.QuotaChange.objects.get(queue_path="root.reports")
    assert change.state == models.QuotaChange.State.WAITING
    assert "usage not known yet (no snapshot)" in change.reason
    assert "usage exceeds" not in change.reason
    assert "usage not known yet" in out


def test_api_unread_alerts_of_one_cluster(two: dict[str, models.Partition], viewer: Any) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    unread = models.Alert.objects.filter(acknowledged_at__isnull=True)
    total = client.get("/api/alerts/unread/").json()["unread"]
    assert total == unread.count()
    for name in ("acme-ml", "lab-west"):
        answer = client.get("/api/alerts/unread/", {"cluster": name}).json()["unread"]
        assert answer == unread.filter(partition__cluster__name=name).count()
        assert 0 < answer < total
        listed = client.get("/api/alerts/", {"cluster": name, "acknowledged": "false"})
        assert listed.json()["count"] == answer
        assert {a["cluster"] for a in listed.json()["results"]} == {name}
    bad = client.get("/api/alerts/unread/", {"cluster": "nowhere"})
    assert bad.status_code == 400
    assert "acme-ml" in bad.json()["cluster"][0]


def test_a_replaced_learned_change_takes_its_queue_max_event_time() -> None:
    """lab-west's v2 lowered root.reports to 12 cores at 13:30 (QUEUE_MAX), v3 to 11 at
    13:58; both configs imported before the events: once the events arrive the replaced
    12-core change is timed by its own event (13:30, fires by 13:50), not the import."""
    for name in ("queues-v1", "queues-v2", "queues"):
        manage("import_config", str(LAB_WEST / "config" / f"{name}.yaml"), "--cluster", "lab-west")
    manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "2026-10-14T14:00:00Z")
    old, new = models.QuotaChange.objects.filter(queue_path="root.reports").order_by("pk")
    assert old.superseded_by == new
    assert old.state == models.QuotaChange.State.RESET
    assert old.new_max == {"vcore": 12000, "memory": 48 * 2**30}
    assert old.clock_source == models.QuotaChange.ClockSource.EVENT
    (event,) = [
        e
        for e in models.ObservedMaxChange.objects.filter(queue="root.reports")
        if e.new_max == old.new_max
    ]
    assert event.time.replace(microsecond=0) == datetime(2026, 10, 14, 13, 30, tzinfo=UTC)
    assert old.clock_detail == f"QUEUE_MAX event {event.event_id}"
    assert old.changed_at == event.time
    assert old.applied_at == event.time
    assert old.deadline == event.time + timedelta(minutes=20)
    assert new.changed_at == datetime(2026, 10, 14, 13, 58, tzinfo=UTC)
    # the scheduler's quota preemption at 13:50 enforced the 12 cores before v3 replaced it
    observed = models.PreemptionRun.objects.get(trigger="observed", kind="quota")
    assert observed.queue == "root.reports"
    assert observed.request["max"] == old.new_max
    assert old.reason.startswith("enforced in the cluster: the scheduler's quota preemption")
    assert f"observed run {observed.pk}" in old.reason
    assert f"replaced by change {new.pk}" in old.reason


def test_cancelling_an_applied_change_says_the_scheduler_keeps_its_timer(staff: Any) -> None:
    """A change learned from the cluster runs on the scheduler's timer: cancelling it here
    only stops the dashboard's prediction, and the confirmation says so; a planned change's
    confirmation says it is only planned."""
    for name in ("queues-v2", "queues"):
        manage("import_config", str(LAB_WEST / "config" / f"{name}.yaml"), "--cluster", "lab-west")
    manage("import_snapshot", str(LAB_WEST / "rest"), "--captured-at", "2026-10-14T14:00:00Z")
    learned = models.QuotaChange.objects.get(state=models.QuotaChange.State.WAITING)
    assert not learned.is_planned
    client = logged_in(staff)
    scope = {"cluster": "lab-west", "partition": "default"}
    text = client.get(reverse("changes"), scope).content.decode()
    applied_part = text.split(f"Cancel change #{learned.pk}?")[1][:300]
    assert "applied in the cluster: only the dashboard's prediction stops" in applied_part
    assert "the scheduler's own timer keeps running" in applied_part
    planned = services.schedule_quota_change(
        learned.partition, "root.reports", new_max={"vcore": 10000, "memory": 48 * 2**30}
    )
    assert planned.is_planned
    assert planned.state == models.QuotaChange.State.WAITING
    text = client.get(reverse("changes"), scope).content.decode()
    planned_part = text.split(f"Cancel change #{planned.pk}?")[1][:300]
    assert "only planned here" in planned_part
    # the API's cancel of an applied change says the same in its reason
    learned = models.QuotaChange.objects.create(
        partition=learned.partition,
        queue_path="root.etl",
        new_max={"vcore": 9000},
        delay=600,
        state=models.QuotaChange.State.WAITING,
        applied_at=learned.applied_at,
        changed_at=learned.changed_at,
        deadline=learned.deadline,
        learned=True,
    )
    api = APIClient()
    api.force_authenticate(staff)
    answer = api.post(f"/api/quota-changes/{learned.pk}/cancel/").json()
    assert answer["state"] == "cancelled"
    assert "the scheduler's own timer keeps running" in answer["reason"]


def test_a_refused_import_names_the_cluster_it_was_for(fixtures_dir: Path) -> None:
    """A refused file stores nothing (so no partition to show): its alert names the
    cluster the administrator imported it into."""
    bad = fixtures_dir / "config" / "invalid" / "quota-delay-under-resources.yaml"
    with pytest.raises(CommandError, match=r"quota\.preemption\.delay"):
        manage("import_config", str(bad), "--cluster", "lab-west")
    with pytest.raises(CommandError):
        manage("import_snapshot", str(bad), "--cluster", "lab-west")
    # an accepted config's warning names its cluster and partition too
    manage("import_config", str(LAB_WEST / "config" / "queues.yaml"), "--cluster", "lab-west")
    (warning,) = models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_WARNING)
    assert warning.message.startswith("config v1 of lab-west/default (queues.yaml): line ")
    config_alert, snapshot_alert = models.Alert.objects.filter(
        kind=models.Alert.Kind.IMPORT_FAILED
    ).order_by("pk")
    assert config_alert.message.startswith(f"config {bad.name} for cluster lab-west refused:")
    assert snapshot_alert.message.startswith(f"snapshot {bad.name} for cluster lab-west refused:")


def test_labels_do_not_say_enforced_for_what_did_not_happen_in_the_cluster() -> None:
    """Kinds, outcomes and legends of what-ifs and predictions never say "enforce": only
    the scheduler enforces, and what it did is "observed"."""
    from dashboard.charts.plans import OUTCOMES
    from dashboard.display import outcome_words

    labels = [o.label for o in OUTCOMES.values()]
    labels += [str(label) for _, label in models.PreemptionRun.Kind.choices]
    labels += [str(label) for _, label in models.Alert.Kind.choices]
    labels += [outcome_words(o) for o in ("enforced", "best_effort", "does_not_help")]
    assert [label for label in labels if "enforc" in label.lower()] == []


def test_api_upload_takes_the_capture_time_of_rest_answers(staff: Any) -> None:
    client = APIClient()
    client.force_authenticate(staff)

    def upload(**extra: str) -> Any:
        files = [
            SimpleUploadedFile(p.name, p.read_bytes())
            for p in sorted((LAB_WEST / "rest").iterdir())
        ]
        return client.post(
            "/api/snapshots/", {"files": files, "cluster": "lab-west", **extra}, format="multipart"
        )

    made = upload(captured_at="2026-10-14T14:00:00Z")
    assert made.status_code == 201, made.content
    assert made.json()["captured_at"] == "2026-10-14T14:00:00Z"
    for bad, words in (
        ("2026-10-14T14:00:00", "no UTC offset"),
        ("2026-13-14T14:00:00Z", "not an ISO 8601 time"),
        ("yesterday", "not an ISO 8601 time"),
        ("2999-01-01T00:00:00Z", "later than now"),
        ("0001-01-01T00:00:00+01:00", "out of range"),
    ):
        refused = upload(captured_at=bad)
        assert refused.status_code == 400, bad
        assert words in json.dumps(refused.json()), (bad, refused.json())
    assert models.ClusterSnapshot.objects.count() == 1


def test_import_links_keep_the_cluster_and_the_form_starts_with_it(
    two: dict[str, models.Partition], staff: Any
) -> None:
    client = logged_in(staff)
    text = client.get(reverse("configs"), {"cluster": "lab-west", "partition": "default"})
    link = text.content.decode().split('data-testid="import-link"')[0].rsplit('href="', 1)[1]
    link = html_mod.unescape(link.split('"')[0])
    assert parse_qs(urlsplit(link).query)["cluster"] == ["lab-west"]
    page = client.get(link)
    assert page.context["scope"].cluster.name == "lab-west"
    assert page.context["form"]["cluster"].value() == "lab-west"
    # without a cluster named, the field stays empty (the answers' clusterId decides)
    assert client.get(reverse("import")).context["form"]["cluster"].value() in (None, "")
