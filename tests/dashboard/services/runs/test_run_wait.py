"""Waiting for a run: the long-poll endpoint, the service behind it, the warm-up task and
the embedded broker's transport."""

from __future__ import annotations

from typing import Any

import factories
from django.conf import settings
from django.test import Client
from django.urls import reverse
from kombu import Connection

from dashboard import broker, models, services
from dashboard.celery import app as celery_app
from dashboard.services import engine_state_cache
from dashboard.services.runs.requests import typed_ask
from engine.preempt import preempt

PENDING = models.PreemptionRun.Status.PENDING
DONE = models.PreemptionRun.Status.DONE


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_wait_answers_at_once_for_a_finished_run(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    """A finished run is answered without waiting, to any signed-in user."""
    run = factories.make_run(snapshot)
    response = _client(viewer).get(reverse("run_wait", args=[run.pk]), {"timeout": "15"})
    assert response.status_code == 200
    assert response.json() == {"run": run.pk, "status": "done", "finished": True}
    assert "no-cache" in response["Cache-Control"]


def test_wait_answers_when_the_run_finishes(snapshot: models.ClusterSnapshot) -> None:
    """The service reads the status again after each pause and returns once it is final."""
    run = factories.make_run(snapshot, status=PENDING, outcome="")
    pauses: list[float] = []

    def worker_finishes(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:  # the worker stores its answer during the third pause
            models.PreemptionRun.objects.filter(pk=run.pk).update(status=DONE)

    assert services.wait_for_run(run.pk, 30.0, sleep=worker_finishes) == "done"
    assert len(pauses) == 3
    assert all(0 < p <= 0.25 for p in pauses)


def test_wait_times_out_cleanly(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """A run still pending at the timeout is answered as not finished (the page asks again)."""
    run = factories.make_run(snapshot, status=PENDING, outcome="")
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    assert services.wait_for_run(run.pk, 3.0, sleep=sleep, clock=lambda: now[0]) == "pending"
    assert now[0] == 3.0  # never sleeps past the deadline
    response = _client(staff).get(reverse("run_wait", args=[run.pk]), {"timeout": "0"})
    assert response.status_code == 200
    assert response.json() == {"run": run.pk, "status": "pending", "finished": False}


def test_wait_requires_sign_in(snapshot: models.ClusterSnapshot) -> None:
    run = factories.make_run(snapshot)
    response = Client().get(reverse("run_wait", args=[run.pk]))
    assert response.status_code == 403
    assert "status" not in response.json()


def test_wait_refuses_bad_timeouts_and_unknown_runs(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    client = _client(viewer)
    run = factories.make_run(snapshot)
    for bad in ("soon", "-1", "21", "nan"):
        answer = client.get(reverse("run_wait", args=[run.pk]), {"timeout": bad})
        assert answer.status_code == 400, bad
        assert answer.json()["detail"].startswith("timeout:")
    missing = client.get(reverse("run_wait", args=[run.pk + 1000]), {"timeout": "0"})
    assert missing.status_code == 404
    assert services.wait_for_run(run.pk + 1000, 1.0) is None


def test_whatif_page_long_polls_a_pending_run(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """The answer area of a pending run names its wait URL; a finished run's has none."""
    client = _client(staff)
    pending = factories.make_run(snapshot, status=PENDING, outcome="")
    html = client.get(reverse("whatif"), {"run": pending.pk}).content.decode()
    assert f'data-live-wait="{reverse("run_wait", args=[pending.pk])}"' in html
    done = factories.make_run(snapshot)
    html = client.get(reverse("whatif"), {"run": done.pk}).content.decode()
    assert "data-live-wait" not in html


def test_whatif_post_waits_for_the_answer_before_redirecting(
    staff: Any,
    snapshot: models.ClusterSnapshot,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """With a wait configured, the post waits, redirects, and the (eager) run finishes.

    The run's task is sent when the test's transaction commits, after the view's wait:
    the view waits its whole timeout here, so the timeout is kept short."""
    settings.DASHBOARD_WHATIF_WAIT_SECONDS = 0.5
    with django_capture_on_commit_callbacks(execute=True):
        response = _client(staff).post(reverse("whatif"), {"kind": "preempt", "ask_key": "ask-1"})
    assert response.status_code == 302
    run = models.PreemptionRun.objects.get()
    assert run.status == DONE


def test_warm_up_task_is_registered_and_harmless(
    snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """Storing a snapshot sends the warm-up; it builds the engine state and changes nothing."""
    assert "dashboard.warm_snapshot" in celery_app.tasks
    engine_state_cache.forget_engine_states()
    rows_before = models.AllocationSpan.objects.count()
    celery_app.tasks["dashboard.warm_snapshot"].delay(snapshot.pk)
    assert engine_state_cache.is_engine_state_cached(snapshot)
    celery_app.tasks["dashboard.warm_snapshot"].delay(snapshot.pk)  # again: a no-op
    assert models.AllocationSpan.objects.count() == rows_before
    assert services.warm_engine_state(snapshot.pk + 1000) is False  # gone: nothing to do

    engine_state_cache.forget_engine_states()
    with django_capture_on_commit_callbacks(execute=True) as sent:
        stored = factories.SnapshotFactory.create(partition_name="other")
    assert len(sent) >= settings.DASHBOARD_WARM_UP_TASKS
    assert engine_state_cache.is_engine_state_cached(stored)
    # the warm state is the one a run reads: same allocations as the rows
    keys = [a.key for a in services.engine_state(stored).cluster.allocations]
    assert keys == sorted(services.snapshot_allocations(stored).values_list("key", flat=True))


def test_embedded_broker_polls_often(tmp_path: Any) -> None:
    """``sqla+`` URLs get the dashboard's transport, with its short polling interval."""
    with Connection(f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}") as conn:
        assert isinstance(conn.transport, broker.Transport)
        assert conn.transport.polling_interval == settings.DASHBOARD_BROKER_POLL_SECONDS
    assert settings.DASHBOARD_BROKER_POLL_SECONDS < 1.0  # kombu's own default is 1 s


def test_preempt_whatifs_share_the_snapshots_preemption_state(
    snapshot: models.ClusterSnapshot,
) -> None:
    """Asks evaluated one after the other on the cached state answer as on a fresh cluster."""
    engine_state_cache.forget_engine_states()
    state = services.engine_state(snapshot)
    sizes = [3000, 9000, 1000, 3000]  # fits / preempts / small / the first one again
    for i, vcore in enumerate(sizes):
        ask = {"key": f"typed-{i}", "queue": "root.b", "resources": {"vcore": vcore}}
        run = services.create_run(
            kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
            snapshot=snapshot,
            request={"ask": {**ask, "priority": 5, "allow_preempt_other": True}},
            enqueue=False,
        )
        services.execute_run(run.pk)
        run.refresh_from_db()
        fresh = preempt(
            engine_state_cache._cluster_from_rows(snapshot),
            typed_ask(run.request["ask"], snapshot),
            state.now,
        )
        assert run.result == fresh.to_dict(), vcore
    assert services.engine_state(snapshot) is state  # one state, reused


def test_fast_select_writes_what_djangos_select_writes() -> None:
    """Same HTML as ``forms.Select`` (escaping, the selected option, boolean attributes)."""
    from django import forms

    from dashboard.pages.fast_select import FastSelect

    choices = [("", "—"), ("root.a", "root.a"), ('root."<b>"', "<b> & co"), ("root.b", "root.b")]

    class Plain(forms.Form):
        queue = forms.ChoiceField(choices=choices, widget=forms.Select(attrs={"data-x": "1"}))

    class Fast(forms.Form):
        queue = forms.ChoiceField(choices=choices, widget=FastSelect(attrs={"data-x": "1"}))

    for initial in ("root.b", 'root."<b>"', "", "missing"):
        plain = str(Plain(initial={"queue": initial}, auto_id="w_%s")["queue"])
        fast = str(Fast(initial={"queue": initial}, auto_id="w_%s")["queue"])
        assert fast == plain, initial
    bound = {"queue": "root.a"}
    assert str(Fast(bound)["queue"]) == str(Plain(bound)["queue"])
    assert " selected>root.a</option>" in str(Fast(bound)["queue"])


def test_a_warm_up_of_a_snapshot_no_longer_the_newest_builds_nothing(
    snapshot: models.ClusterSnapshot,
) -> None:
    """A warm-up task reached after a newer snapshot of the partition was stored (a source
    polled every few seconds) builds nothing; the newest one's builds its state."""
    newer = factories.SnapshotFactory.create(partition_name=snapshot.partition.name)
    engine_state_cache.forget_engine_states()
    celery_app.tasks["dashboard.warm_snapshot"].delay(snapshot.pk)
    assert not engine_state_cache.is_engine_state_cached(snapshot)
    celery_app.tasks["dashboard.warm_snapshot"].delay(newer.pk)
    assert engine_state_cache.is_engine_state_cached(newer)
    assert services.warm_engine_state(snapshot.pk)  # a page's warm-up of an older one: built
