"""Polling a real HTTP server that serves YuniKorn's REST shapes: store on change only,
failures leave stored snapshots intact and alert after the source's threshold."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from sources_helpers import (
    POLLED_FILES,
    T0,
    FakeYuniKorn,
    SleepRecorder,
    fixture_files,
    snapshot_rows,
)

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import services
from dashboard.sources.models import ClusterSource, SourceSnapshot

pytestmark = pytest.mark.django_db

QUEUES = "/ws/v1/partition/default/queues"
NODES = "/ws/v1/partition/default/nodes"
APPS = "/ws/v1/partition/default/applications/active"
EVENTS = "/ws/v1/events/batch"
CONFIG_ENDPOINT = "/ws/v1/config"


def make_source(yunikorn: FakeYuniKorn, **kw: Any) -> ClusterSource:
    fields: dict[str, Any] = {
        "name": "acme-ml",
        "base_url": yunikorn.url,
        "partition": "default",
        "poll_interval": 60,
        "alert_after": 300,
    }
    fields.update(kw)
    return ClusterSource.objects.create(**fields)


def poll(source: ClusterSource, at: Any, sleep: SleepRecorder | None = None) -> Any:
    return services.poll_source(
        source.pk, now=at, fetch=services.default_fetcher(sleep=sleep or SleepRecorder())
    )


def test_poll_stores_a_snapshot_equal_to_uploading_the_same_files(
    yunikorn: FakeYuniKorn,
) -> None:
    """The polled snapshot's rows are exactly those of an upload of the fixture files."""
    source = make_source(yunikorn)

    outcome = poll(source, T0)

    assert outcome.status == "stored"
    polled = dm.ClusterSnapshot.objects.get(pk=outcome.snapshot_id)
    uploaded = platform.import_snapshot(fixture_files(*POLLED_FILES), partition="default", now=T0)
    assert snapshot_rows(polled) == snapshot_rows(uploaded)
    assert polled.captured_at == T0
    assert len(snapshot_rows(polled)["allocations"]) == 19
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.last_success_at == T0
    assert source.last_snapshot_id == polled.pk
    assert source.failing_since is None
    assert source.next_poll_at == T0 + timedelta(seconds=60)
    assert SourceSnapshot.objects.get(snapshot=polled).source_id == source.pk
    # the four partition endpoints, then the scheduler's events and config (neither on
    # this server)
    assert [s.path for s in yunikorn.seen] == [
        "/ws/v1/partitions",
        QUEUES,
        NODES,
        APPS,
        EVENTS,
        CONFIG_ENDPOINT,
    ]


def test_a_poll_parses_the_answer_once(
    yunikorn: FakeYuniKorn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprint and the stored snapshot come from one parse of the answer."""
    from dashboard.importers.snapshot import reader as snapshot_module
    from dashboard.services.snapshots import store as platform_module
    from dashboard.sources import poll as poll_module

    calls: list[int] = []

    def counting(real: Any) -> Any:
        def count(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return real(*args, **kwargs)

        return count

    # the poll's parse (with the source's memo) and any parse of the platform's import
    monkeypatch.setattr(poll_module, "parse_polled", counting(snapshot_module.parse_polled))
    monkeypatch.setattr(platform_module, "parse_snapshot", counting(snapshot_module.parse_snapshot))
    source = make_source(yunikorn)

    assert poll(source, T0).status == "stored"
    assert len(calls) == 1
    assert poll(source, T0 + timedelta(seconds=60)).status == "unchanged"
    assert len(calls) == 2


def test_state_dump_source_reads_one_endpoint_and_matches_its_upload(
    yunikorn: FakeYuniKorn,
) -> None:
    """With use_state_dump the poll reads /debug/fullstatedump only; same rows as its upload."""
    source = make_source(yunikorn, use_state_dump=True)

    outcome = poll(source, T0)

    assert outcome.status == "stored"
    assert [s.path for s in yunikorn.seen] == ["/debug/fullstatedump", EVENTS, CONFIG_ENDPOINT]
    polled = dm.ClusterSnapshot.objects.get(pk=outcome.snapshot_id)
    uploaded = platform.import_snapshot(fixture_files("fullstatedump.json"), now=T0)
    assert snapshot_rows(polled) == snapshot_rows(uploaded)
    assert polled.source_kind == dm.ClusterSnapshot.Source.STATE_DUMP


def test_second_poll_without_change_stores_nothing(yunikorn: FakeYuniKorn) -> None:
    """An unchanged scheduler state is not stored again; the source stays healthy."""
    source = make_source(yunikorn)
    first = poll(source, T0)

    second = poll(source, T0 + timedelta(seconds=60))

    assert second.status == "unchanged"
    assert second.snapshot_id == first.snapshot_id
    assert dm.ClusterSnapshot.objects.count() == 1
    source.refresh_from_db()
    assert source.last_success_at == T0 + timedelta(seconds=60)
    assert source.last_changed_at == T0


def test_reordered_compact_answers_are_not_a_change(yunikorn: FakeYuniKorn) -> None:
    """Go map order and JSON formatting are not state: reversed, compact lists store nothing."""
    source = make_source(yunikorn)
    poll(source, T0)
    nodes = yunikorn.json(NODES)
    apps = yunikorn.json(APPS)
    for node in nodes:
        node["allocations"] = list(reversed(node.get("allocations") or []))
    yunikorn.set_json(NODES, list(reversed(nodes)))
    yunikorn.set_json(APPS, list(reversed(apps)))

    outcome = poll(source, T0 + timedelta(seconds=60))

    assert outcome.status == "unchanged"
    assert dm.ClusterSnapshot.objects.count() == 1


def _queue(doc: dict[str, Any], path: str) -> dict[str, Any]:
    if doc["queuename"] == path:
        return doc
    for child in doc.get("children") or []:
        if path == child["queuename"] or path.startswith(child["queuename"] + "."):
            return _queue(child, path)
    raise KeyError(path)


def test_a_changed_limit_stores_a_new_snapshot(yunikorn: FakeYuniKorn) -> None:
    """A queue's max changed on the scheduler: the next poll stores a second snapshot."""
    source = make_source(yunikorn)
    first = poll(source, T0)
    tree = yunikorn.json(QUEUES)
    _queue(tree, "root.batch")["maxResource"]["vcore"] = 12000
    yunikorn.set_json(QUEUES, tree)

    outcome = poll(source, T0 + timedelta(seconds=60))

    assert outcome.status == "stored"
    assert outcome.snapshot_id != first.snapshot_id
    new = dm.ClusterSnapshot.objects.get(pk=outcome.snapshot_id)
    assert new.queues.get(path="root.batch").max == {"vcore": 12000, "memory": 48 * 1024**3}
    old = dm.ClusterSnapshot.objects.get(pk=first.snapshot_id)
    assert old.queues.get(path="root.batch").max == {"vcore": 10000, "memory": 48 * 1024**3}
    source.refresh_from_db()
    assert source.last_snapshot_id == new.pk
    assert source.last_changed_at == T0 + timedelta(seconds=60)


def test_an_upload_in_between_makes_the_next_poll_store_again(yunikorn: FakeYuniKorn) -> None:
    """When another snapshot became the partition's newest, the live state is stored anew."""
    source = make_source(yunikorn)
    poll(source, T0)
    platform.import_snapshot(fixture_files("fullstatedump.json"), now=T0)
    dm.ClusterSnapshot.objects.filter(source_link__isnull=True).update(
        captured_at=T0 + timedelta(seconds=30)
    )

    outcome = poll(source, T0 + timedelta(seconds=60))

    assert outcome.status == "stored"
    newest = platform.latest_snapshot(dm.Partition.objects.get(name="default"))
    assert newest is not None
    assert newest.pk == outcome.snapshot_id


def test_a_poll_before_the_interval_does_nothing(yunikorn: FakeYuniKorn) -> None:
    """The interval is per source and checked in the database: early polls are no-ops."""
    source = make_source(yunikorn, poll_interval=120)
    poll(source, T0)
    requests = len(yunikorn.seen)

    early = poll(source, T0 + timedelta(seconds=119))

    assert early.status == "not_due"
    assert len(yunikorn.seen) == requests
    assert services.due_source_ids(T0 + timedelta(seconds=119)) == []
    assert services.due_source_ids(T0 + timedelta(seconds=120)) == [source.pk]


def test_disabled_sources_are_not_polled(yunikorn: FakeYuniKorn) -> None:
    source = make_source(yunikorn, enabled=False)

    assert poll(source, T0).status == "not_due"
    assert services.due_source_ids(T0) == []
    assert yunikorn.seen == []


def test_one_claim_wins(yunikorn: FakeYuniKorn) -> None:
    """Two beats or workers claiming one due source: the conditional update lets one win."""
    source = make_source(yunikorn)

    first = services.claim_poll(source.pk, T0)
    second = services.claim_poll(source.pk, T0)
    forced = services.claim_poll(source.pk, T0, force=True)

    assert first is not None
    assert second is None
    assert forced is None  # a live lease blocks even a manual poll
    # the lease expires (worker died): the source can be claimed again
    later = first + timedelta(seconds=1)
    assert services.claim_poll(source.pk, later) is not None


def test_the_beat_sends_a_due_source_once_while_its_poll_waits(
    yunikorn: FakeYuniKorn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A beat tick sends one poll message per due source and marks the source as sent:
    the next ticks send none while that message waits behind other polls in the
    broker's queue; the message's poll claims the source by its mark, a message of a
    tick before does nothing, and a message lost on the way is sent again once a
    lease has passed."""
    from dashboard.sources import tasks

    source = make_source(yunikorn)
    messages: list[tuple[int, str]] = []
    monkeypatch.setattr(
        tasks.poll_cluster_source, "delay", lambda pk, sent=None: messages.append((pk, sent))
    )
    monkeypatch.setattr(platform, "utcnow", lambda: T0)
    tasks.poll_cluster_sources()
    monkeypatch.setattr(platform, "utcnow", lambda: T0 + timedelta(seconds=10))
    tasks.poll_cluster_sources()
    tasks.poll_cluster_sources()

    assert [pk for pk, _ in messages] == [source.pk]
    mark = datetime.fromisoformat(messages[0][1])
    assert services.due_source_ids(T0 + timedelta(seconds=10)) == []
    stale = services.poll_source(source.pk, now=T0 + timedelta(seconds=11), sent=T0)
    assert stale.status == "not_due"
    outcome = services.poll_source(source.pk, now=T0 + timedelta(seconds=12), sent=mark)
    assert outcome.status == "stored"

    # the next message is lost: sent again a lease after it was marked
    due = T0 + timedelta(seconds=12 + 60)
    assert services.mark_sent(source.pk, due) is not None
    assert services.due_source_ids(due + timedelta(seconds=services.lease_seconds() - 1)) == []
    assert services.due_source_ids(due + timedelta(seconds=services.lease_seconds())) == [source.pk]


def test_a_poll_that_lost_its_lease_stores_nothing(yunikorn: FakeYuniKorn) -> None:
    """A slow poll whose lease expired and was taken over must not write its result."""
    source = make_source(yunikorn)
    inner = services.default_fetcher(sleep=SleepRecorder())
    taken: list[object] = []

    def slow_fetch(s: ClusterSource) -> Any:
        result = inner(s)
        lease = ClusterSource.objects.get(pk=s.pk).lease_until
        assert lease is not None
        taken.append(services.claim_poll(s.pk, lease + timedelta(seconds=1)))
        return result

    outcome = services.poll_source(source.pk, now=T0, fetch=slow_fetch)

    assert taken[0] is not None
    assert outcome.status == "lost_lease"
    assert dm.ClusterSnapshot.objects.count() == 0


def _bad(yunikorn: FakeYuniKorn, mode: str) -> str:
    path = NODES
    yunikorn.modes[path] = mode
    return path


@pytest.mark.parametrize(
    ("mode", "error_part"),
    [
        ("hang", "timed out"),
        ("500", "HTTP 500"),
        ("truncated", "partition_nodes.json"),
        ("short_body", "RemoteProtocolError"),
        ("wrong_shape", "partition_nodes.json"),
    ],
)
def test_a_failing_scheduler_keeps_snapshots_records_the_error_and_alerts_once(
    yunikorn: FakeYuniKorn, settings: Any, mode: str, error_part: str
) -> None:
    """Timeouts, 500s, truncated JSON, short bodies and wrong shapes: earlier snapshots stay
    intact, the source records failing-since and the error, and one alert is raised once
    the source has failed for longer than its threshold; a recovery note follows."""
    settings.SOURCES_HTTP_TIMEOUT = 0.3
    source = make_source(yunikorn, alert_after=300)
    good = poll(source, T0)
    before = snapshot_rows(dm.ClusterSnapshot.objects.get(pk=good.snapshot_id))
    _bad(yunikorn, mode)

    t1 = T0 + timedelta(seconds=60)
    first = poll(source, t1)

    assert first.status == "failed"
    assert error_part in first.error
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.FAILING
    assert source.failing_since == t1
    assert source.last_error == first.error
    assert source.last_error_at == t1
    assert source.last_success_at == T0
    assert dm.ClusterSnapshot.objects.count() == 1
    assert snapshot_rows(dm.ClusterSnapshot.objects.get(pk=good.snapshot_id)) == before
    # the failing poll's alert (this fake serves no events batch: that is another fault,
    # alerted on its own once the events have failed for alert_after)
    alerts = dm.Alert.objects.filter(
        kind=services.ALERT_SOURCE_FAILING, message__contains="has been failing"
    )
    assert not alerts.exists()
    # the platform's import_failed alert is not raised for every failed poll
    assert not dm.Alert.objects.filter(kind=dm.Alert.Kind.IMPORT_FAILED).exists()

    poll(source, t1 + timedelta(seconds=240))  # failing for 240 s < 300 s
    assert not alerts.exists()
    poll(source, t1 + timedelta(seconds=300))  # 300 s: the threshold is reached
    assert alerts.count() == 1
    alert = alerts.get()
    assert alert.level == dm.Alert.Level.ERROR
    assert "acme-ml" in alert.message
    assert error_part in alert.message
    poll(source, t1 + timedelta(seconds=360))
    assert alerts.count() == 1  # raised once per failing streak
    source.refresh_from_db()
    assert source.failing_since == t1
    assert source.consecutive_failures == 4
    assert dm.ClusterSnapshot.objects.count() == 1

    yunikorn.modes.clear()
    recovered = poll(source, t1 + timedelta(seconds=420))

    assert recovered.status == "unchanged"
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.failing_since is None
    assert source.consecutive_failures == 0
    notes = dm.Alert.objects.filter(
        kind=services.ALERT_SOURCE_RECOVERED, message__contains="healthy again"
    )
    assert notes.count() == 1
    assert alerts.count() == 1
    assert dm.Alert.objects.filter(
        kind=services.ALERT_SOURCE_FAILING, message__contains="/ws/v1/events/batch"
    ).exists()


def test_transient_errors_are_retried_with_bounded_exponential_backoff(
    yunikorn: FakeYuniKorn, settings: Any
) -> None:
    """A 500 is retried: 1 try + SOURCES_HTTP_RETRIES, waits backoff * 2**i capped at the max."""
    settings.SOURCES_HTTP_RETRIES = 3
    settings.SOURCES_HTTP_BACKOFF = 0.5
    settings.SOURCES_HTTP_BACKOFF_MAX = 1.0
    source = make_source(yunikorn)
    yunikorn.modes[QUEUES] = "500"
    sleep = SleepRecorder()

    outcome = poll(source, T0, sleep)

    assert outcome.status == "failed"
    assert "after 4 tries" in outcome.error
    assert yunikorn.requests_to(QUEUES) == 4
    assert sleep.waits == [0.5, 1.0, 1.0]
    assert yunikorn.requests_to(NODES) == 0  # the poll stops at the failing endpoint


def test_client_errors_are_not_retried(yunikorn: FakeYuniKorn) -> None:
    """A 404 (wrong partition, wrong base URL) fails at once, naming the endpoint."""
    source = make_source(yunikorn, partition="gpu")
    sleep = SleepRecorder()

    outcome = poll(source, T0, sleep)

    assert outcome.status == "failed"
    assert "/ws/v1/partition/gpu/queues: HTTP 404" in outcome.error
    assert sleep.waits == []


def test_alert_threshold_zero_alerts_on_the_first_failure(yunikorn: FakeYuniKorn) -> None:
    source = make_source(yunikorn, alert_after=0)
    yunikorn.modes[QUEUES] = "wrong_shape"

    poll(source, T0)

    assert dm.Alert.objects.filter(kind=services.ALERT_SOURCE_FAILING).count() == 1


def test_an_unreachable_scheduler_is_recorded(yunikorn: FakeYuniKorn) -> None:
    """Connection refused (nothing listens) is a failure with the reason, not a crash."""
    source = make_source(yunikorn, base_url="http://127.0.0.1:9")

    outcome = poll(source, T0)

    assert outcome.status == "failed"
    assert "ConnectError" in outcome.error
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.FAILING


def test_a_partition_mismatch_is_refused(yunikorn: FakeYuniKorn) -> None:
    """A state dump without the source's partition is an error naming it, not a snapshot."""
    source = make_source(yunikorn, partition="gpu", use_state_dump=True)

    outcome = poll(source, T0)

    assert outcome.status == "failed"
    assert "another partition than 'gpu'" in outcome.error
    assert dm.ClusterSnapshot.objects.count() == 0


def test_polled_answers_have_their_own_size_limit(yunikorn: FakeYuniKorn, settings: Any) -> None:
    """A scheduler's answers may be larger than the upload limit (a big cluster's
    applications); SOURCES_MAX_ANSWER_BYTES bounds them, and an error names it."""
    biggest = max(len(data) for data in fixture_files(*POLLED_FILES).values())
    settings.DASHBOARD_MAX_UPLOAD_BYTES = biggest // 2  # an upload of these files is refused
    with pytest.raises(platform.UploadTooLarge, match="DASHBOARD_MAX_UPLOAD_BYTES"):
        platform.import_snapshot(fixture_files(*POLLED_FILES), partition="default", now=T0)
    settings.SOURCES_MAX_ANSWER_BYTES = biggest
    source = make_source(yunikorn)

    assert poll(source, T0).status == "stored"

    settings.SOURCES_MAX_ANSWER_BYTES = biggest - 1
    outcome = poll(source, T0 + timedelta(seconds=60))
    assert outcome.status == "failed"
    assert f"answer larger than {biggest - 1} bytes (SOURCES_MAX_ANSWER_BYTES)" in outcome.error
    assert dm.ClusterSnapshot.objects.count() == 1


def test_beat_task_polls_due_enabled_sources_through_celery(
    yunikorn: FakeYuniKorn, settings: Any
) -> None:
    """dashboard.poll_cluster_sources (eager here) sends one poll per due, enabled source."""
    from dashboard.sources import tasks

    make_source(yunikorn)
    make_source(yunikorn, name="off", partition="other", enabled=False)

    tasks.poll_cluster_sources.delay()

    assert dm.ClusterSnapshot.objects.count() == 1
    assert {s.path for s in yunikorn.seen} == {
        "/ws/v1/partitions",
        QUEUES,
        NODES,
        APPS,
        EVENTS,
        CONFIG_ENDPOINT,
        # the scheduler's health and per-user usage, after the poll (not on this server:
        # /ws/v1/clusters, read only after a healthcheck answer, and the groups' usage,
        # read only after the users', are not asked for)
        "/ws/v1/scheduler/healthcheck",
        "/ws/v1/partition/default/usage/users",
        "/ws/v1/partition/default/applications/completed",
    }
    polled = ClusterSource.objects.get(name="acme-ml")
    assert polled.status == ClusterSource.Status.HEALTHY
    assert ClusterSource.objects.get(name="off").status == ClusterSource.Status.NEW
    # a second tick right away finds nothing due
    tasks.poll_cluster_sources.delay()
    assert len(yunikorn.seen) == 9


def test_fingerprint_ignores_capture_time_but_not_asks() -> None:
    """The state dump's timestamp is not state; a pending ask is."""
    from dashboard.importers.snapshot import parse_snapshot

    files = fixture_files("fullstatedump.json")
    parsed = parse_snapshot(files)
    doc = json.loads(files["fullstatedump.json"])
    doc["timestamp"] = doc["timestamp"] + 10**12
    later = parse_snapshot({"fullstatedump.json": json.dumps(doc).encode()})
    assert later.captured_at != parsed.captured_at
    assert services.state_fingerprint(later) == services.state_fingerprint(parsed)

    asks = dict(parsed.__dict__)
    asks["asks"] = ()
    no_asks = type(parsed)(**asks)
    assert services.state_fingerprint(no_asks) != services.state_fingerprint(parsed)


def test_an_unexpected_error_is_recorded_on_the_source_and_raised(yunikorn: FakeYuniKorn) -> None:
    """A bug must show on the source (failing, last error), and still fail the task."""
    source = make_source(yunikorn)

    def broken(s: ClusterSource) -> Any:
        raise RuntimeError("unexpected answer layout")

    with pytest.raises(RuntimeError):
        services.poll_source(source.pk, now=T0, fetch=broken)

    source.refresh_from_db()
    assert source.status == ClusterSource.Status.FAILING
    # the type only: an exception's text may quote the scheduler's answer
    assert source.last_error == "internal error: RuntimeError (details in the worker log)"
    assert source.lease_until is None  # the next due poll may run
