"""Faults with real processes: a worker killed mid-run, Redis restarted with a change pending,
web server and beat restarted with changes pending, two staff users racing on one queue, and
the clock jumping past several deadlines at once.

Expected each time: every due change fires exactly once, no preemption run is recorded
twice (one enforcement run per change, no allocation taken by two runs), nothing
accepted is lost, and the alert feed says what happened.

The worker, beat and gunicorn processes reach the test database (``transaction=True``
tests, so rows are committed).  The broker is the shared Redis (``REDIS_URL``, a
database of its own) except for the Redis restart, which starts and kills a private
``redis-server`` on a free port.  With CI=true an unreachable Redis or a database that is
not PostgreSQL (where a test needs it) fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from reliability_support import QUEUES_YAML, scenario
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from support.brokers import using_broker, worker_redis_url
from support.processes import database_url, free_port

from dashboard import models, services
from loadtest.stack import Stack, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
]

IN_CI = os.environ.get("CI") == "true"


def _unavailable(what: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} (CI runs the fault tests for real)")
    pytest.skip(what)


@pytest.fixture
def shared_broker() -> Iterator[str]:
    """This xdist worker's own database of the shared Redis (the one every suite gives this
    worker: with REDIS_URL unset, a default of its own here once put one worker's beat on
    another worker's database), emptied before and after."""
    url = worker_redis_url()
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        _unavailable(f"Redis at {url} cannot be reached: {exc}")
    redis.Redis.from_url(url).flushdb()
    with using_broker(url):
        yield url
    redis.Redis.from_url(url).flushdb()


@pytest.fixture
def postgres() -> None:
    if connection.vendor != "postgresql":
        _unavailable("the race test needs PostgreSQL (set DATABASE_URL)")


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    s = Stack(tmp_path, {})
    yield s
    s.stop_all(signal.SIGKILL)


def _env(broker: str, **extra: str) -> dict[str, str]:
    return Stack.base_env(database_url(), broker, DASHBOARD_SWEEP_SECONDS="1", **extra)


@pytest.fixture
def staff(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("ops", password="pw", is_staff=True)


@pytest.fixture
def loaded(staff: Any) -> models.ClusterSnapshot:
    """Config and snapshot of the small cluster: root.a (usage 8 cores, max 8, 60 s delay)."""
    services.import_config(QUEUES_YAML.encode(), filename="queues.yaml", user=staff)
    snapshot = services.import_snapshot(
        {"scenario.json": json.dumps(scenario()).encode()}, user=staff
    )
    # the leaves get a max they had not: rule set seed starts their timers (the
    # scheduler's rules treat a newly set max as a raise)
    snapshot.partition.timer_rules = "seed"
    snapshot.partition.save(update_fields=["timer_rules"])
    return snapshot


def _due_in(snapshot: models.ClusterSnapshot, path: str, new_max: int, seconds: float) -> Any:
    """A decrease of *path* whose 60 s timer has *seconds* left (saved 60 - seconds ago)."""
    started = timezone.now() - timedelta(seconds=60 - seconds)
    change = services.schedule_quota_change(
        snapshot.partition, path, new_max={"vcore": new_max}, snapshot=snapshot, now=started
    )
    assert change.state == "waiting", change.reason
    return change


# --------------------------------------------------------------------------- invariants


def assert_fired_once(change_ids: list[int]) -> None:
    """Each change fired (a prediction, awaiting the scheduler), with at most one
    enforcement run (done, one attempt chain) and exactly one 'fired' alert; no allocation
    is named twice by one run. (Two predicted runs may name the same allocation: a
    prediction preempts nothing in the cluster, so each is computed on the usage the
    snapshot reports - issue 24.)"""
    runs = models.PreemptionRun.objects.filter(kind="quota_enforcement")
    for change_id in change_ids:
        change = models.QuotaChange.objects.get(pk=change_id)
        assert change.state == "fired", (change.pk, change.state, change.reason)
        mine = runs.filter(idempotency_key=f"quota-change-{change_id}")
        assert mine.count() <= 1
        if change.run_id is not None:
            run = mine.get()
            assert run.pk == change.run_id
            assert run.status == "done", run.error
            keys = list(run.victims.values_list("allocation_key", flat=True))
            assert run.result is not None
            assert keys == run.result["victims"]
            assert len(keys) == len(set(keys)), f"an allocation was named twice: {keys}"
        fired = models.Alert.objects.filter(change=change_id, message__icontains="fired")
        assert fired.count() == 1, [a.message for a in models.Alert.objects.all()]
    assert runs.count() == len({r.idempotency_key for r in runs})


def _alerts() -> list[str]:
    return [f"{a.kind}: {a.message}" for a in models.Alert.objects.order_by("created_at", "id")]


# --------------------------------------------------------------------------- the faults


def test_worker_killed_mid_enforcement_finishes_once(
    stack: Stack, shared_broker: str, loaded: models.ClusterSnapshot
) -> None:
    """SIGKILL to the worker while the due change's enforcement runs: a new worker takes the
    run over after its lease, finishes it once, and the feed says it was taken over."""
    change = _due_in(loaded, "root.a", 5000, 0)
    slow = _env(
        shared_broker,
        DASHBOARD_TEST_TASK_DELAY="120",
        DASHBOARD_RUN_LEASE_SECONDS="4",
        CELERY_VISIBILITY_TIMEOUT="6",
    )
    stack.env = slow
    first = stack.worker()
    beat = stack.beat()
    wait_for(lambda: "sleeps" in first.text(), 90, "the enforcement run to start", first)
    run = models.PreemptionRun.objects.get(idempotency_key=f"quota-change-{change.pk}")
    assert (run.status, run.attempts) == ("running", 1)
    first.kill(signal.SIGKILL)
    beat.kill(signal.SIGKILL)
    assert models.RunVictim.objects.count() == 0, "nothing recorded by the killed attempt"

    stack.env = _env(shared_broker, DASHBOARD_RUN_LEASE_SECONDS="4", CELERY_VISIBILITY_TIMEOUT="6")
    second = stack.worker()
    stack.beat()
    wait_for(
        lambda: models.QuotaChange.objects.get(pk=change.pk).state == "fired",
        120,
        "the new worker to finish the run",
        second,
    )
    sweeps = second.text().count("dashboard.sweep_quota_changes")
    wait_for(
        lambda: second.text().count("dashboard.sweep_quota_changes") >= sweeps + 6,
        60,
        "three more sweeps",
        second,
    )
    run.refresh_from_db()
    print(f"[figures] worker kill: run {run.pk} attempts {run.attempts}, alerts {_alerts()}")
    assert run.attempts == 2
    assert_fired_once([change.pk])
    assert models.Alert.objects.filter(run=run, message__icontains="taken over").count() == 1


def test_redis_restart_with_a_change_pending_loses_nothing(
    stack: Stack, loaded: models.ClusterSnapshot, staff: Any
) -> None:
    """A private Redis dies (memory only: its queue is gone) with a change pending and a
    what-if queued; a what-if is accepted during the outage.  After Redis comes back the
    change fires once and every accepted what-if is evaluated once."""
    port = free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    stack.env = _env(broker, DASHBOARD_RUN_REQUEUE_SECONDS="3")
    redis_proc = stack.redis(port)
    with using_broker(broker):
        worker = stack.worker()
        stack.beat()
        change = _due_in(loaded, "root.a", 5000, 8)
        api = APIClient(raise_request_exception=False)
        api.force_authenticate(staff)
        body = {"snapshot": loaded.pk, "ask_key": "ask-1"}
        worker.kill(signal.SIGKILL)  # nobody consumes: the next message waits in Redis
        queued = api.post("/api/whatif/preempt/", body, format="json")
        assert queued.status_code == 202, queued.content
        redis_proc.kill(signal.SIGKILL)  # the queued message is lost with Redis
        during = api.post("/api/whatif/preempt/", body, format="json")
        print(f"[figures] what-if during the Redis outage: HTTP {during.status_code}")
        deadline = models.QuotaChange.objects.get(pk=change.pk).deadline
        assert deadline is not None
        while timezone.now() < deadline + timedelta(seconds=1):
            time.sleep(0.2)  # the deadline passes while Redis is down
        assert models.QuotaChange.objects.get(pk=change.pk).state == "waiting"
        stack.redis(port)  # back, empty
        worker = stack.worker()
        # the row of the request answered during the outage is there whatever the answer said
        accepted = list(
            models.PreemptionRun.objects.filter(kind="whatif_preempt").values_list("pk", flat=True)
        )
        assert len(accepted) == 2
        wait_for(
            lambda: (
                models.QuotaChange.objects.get(pk=change.pk).state == "fired"
                and models.PreemptionRun.objects.filter(pk__in=accepted, status="done").count() == 2
            ),
            180,
            "the change to fire and both what-ifs to be evaluated",
            worker,
        )
    runs = models.PreemptionRun.objects.filter(pk__in=accepted)
    print(
        "[figures] Redis restart: what-if attempts "
        f"{sorted(runs.values_list('attempts', flat=True))}, alerts {_alerts()}"
    )
    assert sorted(runs.values_list("attempts", flat=True)) == [1, 1]
    assert_fired_once([change.pk])
    # accepted means told so: a write stored during the outage must not answer 500
    assert during.status_code == 202, during.content[:500]


def test_web_server_and_beat_restart_with_changes_pending(
    stack: Stack, shared_broker: str, loaded: models.ClusterSnapshot, staff: Any
) -> None:
    """Changes accepted over HTTP by gunicorn; gunicorn and beat are killed before the
    deadlines, which pass while they are down; after the restart each change fires once and
    every accepted write is there, as the API itself reports."""
    token = Token.objects.create(user=staff).key
    port = free_port()
    stack.env = _env(shared_broker)
    web = stack.gunicorn(port, workers=2)
    stack.worker()
    beat = stack.beat()
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Token {token}"},
        timeout=30,
    )
    accepted: list[int] = []
    for path, new_max in (("root.a.x", 2000), ("root.a.y", 3000)):
        answer = client.post(
            "/api/quota-changes/",
            json={
                "partition": "default",
                "queue_path": path,
                "new_max": {"vcore": new_max},
                "new_delay": 6,
            },
        )
        assert answer.status_code == 201, answer.text
        accepted.append(answer.json()["id"])
    web.kill(signal.SIGKILL)
    beat.kill(signal.SIGKILL)
    deadlines = [models.QuotaChange.objects.get(pk=i).deadline for i in accepted]
    last = max(d for d in deadlines if d is not None)
    while timezone.now() < last + timedelta(seconds=2):
        time.sleep(0.2)
    assert set(
        models.QuotaChange.objects.filter(pk__in=accepted).values_list("state", flat=True)
    ) == {"waiting"}, "nothing fires while beat is down"

    stack.gunicorn(port, workers=2)
    stack.beat()

    def states() -> set[str]:
        return {client.get(f"/api/quota-changes/{i}/").json()["state"] for i in accepted}

    wait_for(lambda: states() == {"fired"}, 120, "both changes to fire after the restart")
    listed = client.get("/api/quota-changes/", params={"partition": "default"}).json()
    assert set(accepted) <= {c["id"] for c in listed["results"]}
    runs = client.get("/api/runs/", params={"kind": "quota_enforcement"}).json()
    print(f"[figures] web+beat restart: {runs['count']} enforcement runs, alerts {_alerts()}")
    assert runs["count"] == len(accepted)
    for change_id in accepted:
        feed = client.get("/api/alerts/", params={"change": change_id}).json()
        assert any("fired" in a["message"] for a in feed["results"]), feed
    client.close()
    assert_fired_once(accepted)


def test_two_staff_users_change_the_same_queue_at_once(
    postgres: None, loaded: models.ClusterSnapshot
) -> None:
    """Two staff users (threads, own connections, PostgreSQL) post a lower max for root.a at
    the same instant, 15 times: no error, every accepted change is stored, at most one change
    of the queue is active, each earlier change was closed by a later one, and the max in
    force is the one of the change saved last."""
    users = [
        get_user_model().objects.create_user(f"ops{i}", password="pw", is_staff=True)
        for i in range(2)
    ]
    rounds = 15
    statuses: list[int] = []
    accepted: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def user(i: int) -> None:
        api = APIClient()
        api.force_authenticate(users[i])
        try:
            for r in range(rounds):
                barrier.wait(timeout=60)
                answer = api.post(
                    "/api/quota-changes/",
                    {
                        "partition": "default",
                        "queue_path": "root.a",
                        "new_max": {"vcore": 7000 - 100 * (2 * r + i)},
                    },
                    format="json",
                )
                with lock:
                    statuses.append(answer.status_code)
                    if answer.status_code == 201:
                        accepted.append(answer.json()["id"])
        finally:
            connection.close()

    threads = [threading.Thread(target=user, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    changes = models.QuotaChange.objects.filter(partition__name="default", queue_path="root.a")
    states = sorted(changes.values_list("state", flat=True))
    print(f"[figures] concurrent changes: statuses {sorted(set(statuses))}, states {states}")
    assert statuses == [201] * (2 * rounds)
    assert sorted(accepted) == sorted(changes.values_list("pk", flat=True))
    active = list(changes.filter(state__in=["waiting", "running"]))
    assert len(active) <= 1
    newest = changes.order_by("-changed_at", "-id").first()
    assert newest is not None
    if active:
        assert (active[0].pk, active[0].changed_at) == (newest.pk, newest.changed_at), (
            "the change saved last (the active one) must be the newest by changed_at"
        )
    for c in changes.exclude(pk=newest.pk):
        assert c.state in ("reset", "cancelled_by_increase", "done"), (c.pk, c.state)
        if c.state != "done":  # done = decided at once (an increase): it had no timer to close
            assert c.superseded_by_id is not None, c.pk
    # the administrator's plan as it stands (the changes are planned here, not in force)
    planned = services.queue_settings(loaded.partition, "root.a", planned=True).max
    assert planned == newest.new_max


def test_clock_jumps_past_several_deadlines_at_once(loaded: models.ClusterSnapshot) -> None:
    """Three waiting decreases with different deadlines; the sweep's clock jumps past all of
    them: leaves fire before their parent, each change once, and sweeping again (later)
    fires nothing more. Each firing is a prediction on the snapshot as the scheduler
    reported it: the leaves' predicted victims are not gone when the parent fires."""
    t0 = timezone.now()
    partition = loaded.partition
    plan = [("root.a.x", 2000, 0), ("root.a.y", 3000, 10), ("root.a", 6000, 20)]
    ids = []
    for path, new_max, offset in plan:
        change = services.schedule_quota_change(
            partition,
            path,
            new_max={"vcore": new_max},
            snapshot=loaded,
            now=t0 + timedelta(seconds=offset),
        )
        assert change.state == "waiting", change.reason
        ids.append(change.pk)
    assert services.sweep_due_changes(now=t0 + timedelta(seconds=30)).fired == ()
    report = services.sweep_due_changes(now=t0 + timedelta(hours=2))
    again = services.sweep_due_changes(now=t0 + timedelta(hours=3))
    runs = list(models.PreemptionRun.objects.filter(kind="quota_enforcement").order_by("id"))
    shown = [(r.queue, r.outcome, [v.allocation_key for v in r.victims.all()]) for r in runs]
    print(f"[figures] clock jump: fired {report.fired}, again {again.fired}, runs {shown}")
    assert again.fired == ()
    assert [r.queue for r in runs] == ["root.a.x", "root.a.y", "root.a"][: len(runs)]
    # each predicted run sits in history at its change's deadline, not the sweep's time
    deadlines = {c.pk: c.deadline for c in models.QuotaChange.objects.filter(pk__in=ids)}
    assert [r.queued_at for r in runs] == [deadlines[r.request["change"]] for r in runs]
    assert_fired_once(ids)
