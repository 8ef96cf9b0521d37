"""A partition's timer rule set decides every deadline it shows, and a scheduler restart
seen in an uploaded folder re-arms the timers (engine.md 5.1 and 5; issue 24, items 1-2).

On the shared acme-ml REST folder: root.research.nlp has max 16 cores, usage 8 (12
allocated, 4 of them being preempted) and a 10-minute quota preemption delay. Its
events (instance 8e4cef37-...) run from 09:40:00 to 09:59:30 on 2026-09-01.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_answers import at, rest_files
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.services.quota.deadlines import set_timer_rules

pytestmark = pytest.mark.django_db

NLP = "root.research.nlp"
CAPTURED = at("2026-09-01T09:59:50")  # the folder's capture (after its last event)
T = at("2026-09-01T10:00:00")
RESTART = at("2026-09-01T10:05:00")
NEW_UUID = "0b9d5a6e-restarted-instance"


@pytest.fixture
def acme(fixtures_dir: Path) -> dict[str, bytes]:
    return rest_files(fixtures_dir / "rest")


def _with_nlp_max(queues: bytes, vcore: int) -> bytes:
    doc = json.loads(queues)
    stack = [doc]
    while stack:
        q = stack.pop()
        if q["queuename"] == NLP:
            q["maxResource"]["vcore"] = vcore
        stack.extend(q.get("children") or [])
    return json.dumps(doc).encode()


def _config_with_nlp_max(config: bytes, cores: str) -> bytes:
    doc = json.loads(config)
    for part in doc["Partitions"]:
        stack = list(part["Queues"])
        while stack:
            q = stack.pop()
            if q["Name"] == "nlp":
                q["Resources"]["Max"]["vcore"] = cores
            stack.extend(q.get("Queues") or [])
    return json.dumps(doc).encode()


def restarted(acme: dict[str, bytes]) -> dict[str, bytes]:
    """The same folder captured after a scheduler restart at 10:05: another InstanceUUID
    and event ids from 0 again (the first two records, re-stamped from 10:05:00); the
    scheduler runs nlp's 6-core max (the change was applied in the cluster)."""
    doc = json.loads(acme["events_batch.json"])
    records = [dict(r) for r in doc["EventRecords"][:2]]
    base = int(RESTART.timestamp() * 10**9)
    for i, r in enumerate(records):
        r["timestampNano"] = base + i * 1000
    events = {"InstanceUUID": NEW_UUID, "LowestID": 0, "HighestID": 1, "EventRecords": records}
    return {
        **acme,
        "events_batch.json": json.dumps(events).encode(),
        "partition_queues.json": _with_nlp_max(acme["partition_queues.json"], 6000),
        "config.json": _config_with_nlp_max(acme["config.json"], "6"),
    }


def page(staff: Any, url: str) -> str:
    client = Client()
    client.force_login(staff)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def two_decreases(partition: models.Partition) -> models.QuotaChange:
    """nlp 16 -> 6 cores at 10:00, then 6 -> 5 at 10:02 (usage 8 above both)."""
    services.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T)
    return services.schedule_quota_change(
        partition, NLP, new_max={"vcore": 5000}, now=T + timedelta(minutes=2)
    )


def test_default_rule_set_is_scheduler_and_a_second_decrease_keeps_the_first_start(
    acme: dict[str, bytes], staff: Any
) -> None:
    """Go's setPreemptionTime, lowered again with a start time set: kept (10:00 + 10 min);
    the change page names the rule set and the rule."""
    partition = services.import_snapshot(acme, now=CAPTURED).partition
    assert partition.timer_rules == "scheduler"
    second = two_decreases(partition)
    assert (second.state, second.deadline) == ("waiting", T + timedelta(minutes=10))
    html = page(staff, f"/changes/{second.pk}/")
    assert "kept from the first decrease at 2026-09-01 10:00:00 UTC (rule set scheduler)" in html
    assert 'data-testid="timer-rules">rule set <strong>scheduler</strong>' in html


def test_switching_a_partition_to_seed_changes_the_deadline_shown(
    acme: dict[str, bytes], staff: Any, staff_client: APIClient, viewer_client: APIClient
) -> None:
    """Under ``seed`` the second decrease resets the timer from 10:02 (10:12); switching
    back to ``scheduler`` restores 10:10. Only staff may switch, with a valid rule set."""
    partition = services.import_snapshot(acme, now=CAPTURED).partition
    second = two_decreases(partition)
    url = f"/api/partitions/{partition.pk}/timer-rules/"
    assert viewer_client.post(url, {"timer_rules": "seed"}, format="json").status_code == 403
    refused = staff_client.post(url, {"timer_rules": "go"}, format="json")
    assert refused.status_code == 400
    assert "timer_rules" in refused.json()
    answer = staff_client.post(url, {"timer_rules": "seed"}, format="json")
    assert (answer.status_code, answer.json()["timer_rules"]) == (200, "seed")
    second.refresh_from_db()
    assert second.deadline == T + timedelta(minutes=12)
    html = page(staff, f"/changes/{second.pk}/")
    assert "reset from the change at 2026-09-01 10:02:00 UTC (rule set seed)" in html
    shown = staff_client.get(f"/api/quota-changes/{second.pk}/").json()
    assert shown["deadline_reason"]["rule"] == "reset"
    assert shown["deadline_reason_text"].startswith("reset from the change at 2026-09-01 10:02")
    assert "10:12:00" in html
    set_timer_rules(partition, "scheduler", now=T + timedelta(minutes=3))
    second.refresh_from_db()
    assert second.deadline == T + timedelta(minutes=10)


def test_a_restart_in_an_uploaded_folder_rearms_the_deadline_and_is_shown(
    acme: dict[str, bytes], staff: Any
) -> None:
    """The waiting decrease (due 10:10) is lost with the scheduler at its restart at 10:05
    (the new instance's first event); recovery adds nlp's allocations again through
    IncAllocatedResource with no start time, usage 8 cores over the 6-core max: re-armed
    at 10:05 + 10 min = 10:15. Under ``seed`` the pending timer restarts from zero too."""
    partition = services.import_snapshot(acme, now=CAPTURED).partition
    change = services.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T)
    assert change.deadline == T + timedelta(minutes=10)
    (baseline,) = models.SchedulerStart.objects.all()
    assert (baseline.is_restart, baseline.instance_uuid) == (
        False,
        json.loads(acme["events_batch.json"])["InstanceUUID"],
    )
    services.import_snapshot(restarted(acme), now=RESTART + timedelta(minutes=1))
    change.refresh_from_db()
    assert change.deadline == RESTART + timedelta(minutes=10), change.reason
    assert change.deadline_reason["rule"] == "rearmed"
    restart = models.SchedulerStart.objects.get(is_restart=True)
    assert (restart.instance_uuid, restart.started_at) == (NEW_UUID, RESTART)
    assert restart.source == "first event of the new InstanceUUID"
    # root.batch recovers 12 cores allocated (2 of them being preempted) over its 10-core
    # max: the scheduler's usage is allocated (engine.md 5.1), it is re-armed too
    assert [q["queue"] for q in restart.rearmed] == [NLP, "root.batch"]
    alert = models.Alert.objects.get(kind=models.Alert.Kind.SCHEDULER_RESTART)
    assert f"{NLP} until 2026-09-01 10:15:00 UTC" in alert.message
    history = page(staff, "/history/")
    assert 'data-testid="scheduler-restarts"' in history
    assert NEW_UUID in history
    assert "the scheduler restarted at 2026-09-01 10:05:00 UTC" in page(staff, "/alerts/")
    shown = page(staff, f"/changes/{change.pk}/")
    assert "re-armed at the scheduler&#x27;s restart at 2026-09-01 10:05:00 UTC" in shown
    # the same folder again: the instance is known, nothing moves
    services.import_snapshot(restarted(acme), now=RESTART + timedelta(minutes=2))
    assert models.SchedulerStart.objects.count() == 2
    # rule set seed: the pending timer also restarts from zero at the restart
    set_timer_rules(partition, "seed", now=RESTART + timedelta(minutes=3))
    change.refresh_from_db()
    assert change.deadline == RESTART + timedelta(minutes=10)


def test_a_restart_rearms_a_queue_without_a_timer_only_under_scheduler(
    acme: dict[str, bytes],
) -> None:
    """A decrease saved while quota preemption is off: the seed starts no timer, and its
    restart only restarts pending timers, so nothing is armed.  The scheduler applies
    the config whatever the flag (``setPreemptionTime`` never reads it, engine.md 5.1):
    the timer waits from 10:00, and the restart re-arms it from 10:05 (Go's recovery,
    IncAllocatedResource: flag on, managed, delay, max set, no start time, usage over
    the max) to 10:05 + 10 min."""
    for rules, armed in (("scheduler", True), ("seed", False)):
        models.Partition.objects.all().delete()
        models.SchedulerStart.objects.all().delete()
        partition = services.import_snapshot(acme, now=CAPTURED).partition
        partition.quota_preemption_enabled = False
        partition.timer_rules = rules
        partition.save()
        change = services.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T)
        assert (change.state, change.deadline) == (
            ("waiting", T + timedelta(minutes=10)) if armed else ("done", None)
        )
        # seen applied in the cluster (as a config read from it shows): the scheduler's max
        models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=T)
        partition.quota_preemption_enabled = True
        partition.save()
        services.import_snapshot(restarted(acme), now=RESTART + timedelta(minutes=1))
        waiting = models.QuotaChange.objects.filter(queue_path=NLP, state="waiting")
        assert [c.deadline for c in waiting] == ([RESTART + timedelta(minutes=10)] if armed else [])


def _dump_after_restart(dump: bytes, started: int, captured: int) -> bytes:
    doc = json.loads(dump)
    doc["clusterInfo"][0]["startTime"] = started
    doc["timestamp"] = captured
    stack = list(doc["queues"])
    while stack:
        q = stack.pop()
        if q["queuename"] == NLP:
            q["maxResource"]["vcore"] = 6000
        stack.extend(q.get("children") or [])
    return json.dumps(doc).encode()


def test_a_restart_read_from_the_state_dumps_start_time_rearms_the_deadline(
    fixtures_dir: Path,
) -> None:
    """Two state dumps whose ``clusterInfo[0].startTime`` (the dao's ``ClusterDAOInfo``,
    nanoseconds) differ: the second scheduler started at 10:05, so nlp (8 cores over the
    6-core max) is re-armed at 10:05 + 10 min, the time taken from startTime."""
    dump = (fixtures_dir / "rest" / "fullstatedump.json").read_bytes()
    partition = services.import_snapshot({"fullstatedump.json": dump}, now=T).partition
    (baseline,) = models.SchedulerStart.objects.all()
    assert (baseline.source, baseline.is_restart) == ("/ws/v1/clusters startTime", False)
    change = services.schedule_quota_change(
        partition, NLP, new_max={"vcore": 6000}, now=T + timedelta(seconds=20)
    )
    assert change.deadline == T + timedelta(minutes=10, seconds=20)
    ns = 10**9
    later = _dump_after_restart(
        dump, int(RESTART.timestamp()) * ns, int((RESTART + timedelta(minutes=1)).timestamp()) * ns
    )
    services.import_snapshot({"fullstatedump.json": later}, now=RESTART + timedelta(minutes=2))
    restart = models.SchedulerStart.objects.get(is_restart=True)
    assert (restart.started_at, restart.source) == (RESTART, "/ws/v1/clusters startTime")
    change.refresh_from_db()
    assert change.deadline == RESTART + timedelta(minutes=10), change.reason


def test_staff_switch_the_rule_set_in_the_admin(acme: dict[str, bytes], staff: Any) -> None:
    """The admin's partition form sets the rule set like the API: the waiting deadline is
    derived again (seed: 10:02 + 10 min)."""
    partition = services.import_snapshot(acme, now=CAPTURED).partition
    second = two_decreases(partition)
    staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    response = client.post(
        f"/admin/dashboard/partition/{partition.pk}/change/",
        {
            "cluster": partition.cluster_id,
            "name": partition.name,
            "quota_preemption_enabled": "on" if partition.quota_preemption_enabled else "",
            "miss": partition.miss,
            "timer_rules": "seed",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    partition.refresh_from_db()
    second.refresh_from_db()
    assert (partition.timer_rules, second.deadline) == ("seed", T + timedelta(minutes=12))
