"""Source affinity (dashboard/sources/affinity.py): the beat sends each source's polls to
one live poller's own queue, releases the sources of dead pollers, and a poll of a source
polled often stores its snapshot without warm-ups (the what-if page asks for them).

The real processes (two single-process pollers and a beat on Redis, one killed) are in
test_poll_affinity_integration.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sources_helpers import FakeYuniKorn, SleepRecorder

from dashboard import services as platform
from dashboard.sources import affinity, services
from dashboard.sources.models import ClusterSource, SourcePoller

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def pollers(*names: str) -> list[affinity.Poller]:
    return [affinity.Poller(n, f"polls.{n}") for n in names]


def test_each_source_has_one_owner_and_only_a_leaving_pollers_sources_move() -> None:
    three = pollers("p0@a", "p1@b", "p2@c")
    owners = {s: affinity.owner(s, three) for s in range(300)}
    assert affinity.owner(7, list(reversed(three))) == owners[7]  # not by list order
    counts = {p.name: sum(1 for o in owners.values() if o == p) for p in three}
    assert all(count > 50 for count in counts.values()), counts  # spread over all three

    two = [p for p in three if p.name != "p1@b"]
    for source, before in owners.items():
        after = affinity.owner(source, two)
        if before is not None and before.name != "p1@b":
            assert after == before  # kept its poller (and that poller's memo)
        else:
            assert after in two
    assert affinity.owner(1, []) is None


def test_live_pollers_are_those_seen_within_the_ttl(settings: Any) -> None:
    settings.SOURCES_POLLER_TTL_SECONDS = 20
    affinity.note_alive("p0@a", "polls.p0@a", T0)
    affinity.note_alive("p1@b", "polls.p1@b", T0 - timedelta(seconds=30))
    affinity.note_alive("p2@c", "polls.p2@c", T0 - timedelta(hours=2))

    assert affinity.live_pollers(T0) == pollers("p0@a")
    # a poller gone for long is forgotten (a restarted pod comes back under a new name)
    assert set(SourcePoller.objects.values_list("name", flat=True)) == {"p0@a", "p1@b"}
    affinity.note_alive("p1@b", "polls.p1@b", T0)  # its heartbeat again
    assert affinity.live_pollers(T0) == pollers("p0@a", "p1@b")
    affinity.note_gone("p0@a")  # shut down
    assert affinity.live_pollers(T0) == pollers("p1@b")

    settings.SOURCES_POLL_AFFINITY = False
    assert affinity.live_pollers(T0) == []


def test_the_tick_sends_each_due_source_to_its_pollers_queue(
    yunikorn: FakeYuniKorn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.sources import tasks

    live = pollers("p0@a", "p1@b")
    # Sources until each poller owns at least one: ids come from the database, and eight
    # of them all hash to one poller once in 128 runs.
    sources: list[ClusterSource] = []
    while len(sources) < 8 or len({affinity.owner(s.pk, live) for s in sources}) < 2:
        i = len(sources)
        sources.append(
            ClusterSource.objects.create(name=f"s{i}", base_url=yunikorn.url, partition=f"p{i}")
        )
        assert i < 64, "every source hashed to one poller"
    for name in ("p0@a", "p1@b"):
        affinity.note_alive(name, f"polls.{name}", T0)
    sent: list[tuple[int, str | None]] = []

    def apply_async(args: tuple[int], kwargs: dict[str, str], queue: str | None = None) -> None:
        sent.append((args[0], queue))

    monkeypatch.setattr(tasks.poll_cluster_source, "apply_async", apply_async)
    monkeypatch.setattr(platform, "utcnow", lambda: T0)
    tasks.poll_cluster_sources()

    expected = {s.pk: affinity.owner(s.pk, live) for s in sources}
    assert sorted(sent) == sorted((pk, p.queue) for pk, p in expected.items() if p)
    assert {q for _, q in sent} == {"polls.p0@a", "polls.p1@b"}  # both have sources
    for source in sources:
        source.refresh_from_db()
        owner = expected[source.pk]
        assert owner is not None
        assert source.sent_to == owner.name


def test_a_dead_pollers_sources_are_released_and_sent_to_the_live_one(
    yunikorn: FakeYuniKorn, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A poller not seen within the TTL: its sources - one whose message waits in its
    queue, one whose poll it holds the lease of - are due again at the next tick and sent
    to the live poller; the dead one's late poll finds its lease gone and stores nothing."""
    from dashboard.sources import tasks

    settings.SOURCES_POLLER_TTL_SECONDS = 20
    waiting = ClusterSource.objects.create(name="waiting", base_url=yunikorn.url, partition="a")
    polling = ClusterSource.objects.create(name="polling", base_url=yunikorn.url, partition="b")
    other = ClusterSource.objects.create(name="other", base_url=yunikorn.url, partition="c")
    affinity.note_alive("dead@a", "polls.dead@a", T0)
    affinity.note_alive("live@b", "polls.live@b", T0)
    assert services.mark_sent(waiting.pk, T0, to="dead@a") is not None
    polling_mark = services.mark_sent(polling.pk, T0, to="dead@a")
    lease = services.claim_poll(polling.pk, T0 + timedelta(seconds=1), sent=polling_mark)
    assert lease is not None
    assert services.mark_sent(other.pk, T0, to="live@b") is not None

    later = T0 + timedelta(seconds=25)  # "dead@a" missed its heartbeats for 25 s
    affinity.note_alive("live@b", "polls.live@b", later)
    sent: list[tuple[int, str | None]] = []
    monkeypatch.setattr(
        tasks.poll_cluster_source,
        "apply_async",
        lambda args, kwargs, queue=None: sent.append((args[0], queue)),
    )
    monkeypatch.setattr(platform, "utcnow", lambda: later)
    tasks.poll_cluster_sources()

    assert sorted(sent) == sorted([(waiting.pk, "polls.live@b"), (polling.pk, "polls.live@b")])
    for source in (waiting, polling):
        source.refresh_from_db()
        assert source.sent_to == "live@b"
        assert source.lease_until is None
    other.refresh_from_db()
    assert other.sent_to == "live@b"  # a live poller's source: left as it was
    # the dead poller was only late: its poll of "polling" ends finding its lease gone
    outcome = services.record_failure(polling.pk, lease, "late", now=later)
    assert outcome.status == "lost_lease"


@pytest.mark.parametrize(("interval", "warm_ups"), [(10, 0), (59, 0), (60, 2), (300, 2)])
def test_a_source_polled_often_stores_its_snapshots_without_warm_ups(
    yunikorn: FakeYuniKorn,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    interval: int,
    warm_ups: int,
) -> None:
    settings.DASHBOARD_WARM_UP_TASKS = 2
    settings.SOURCES_WARM_UP_MIN_INTERVAL = 60
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, poll_interval=interval
    )
    sent: list[str] = []
    from dashboard.celery import app

    real = app.signature

    def signature(name: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(name)
        return real(name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(app, "signature", signature)
        with django_capture_on_commit_callbacks(execute=True):
            outcome = services.poll_source(
                source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder())
            )
    assert outcome.status == "stored"
    assert sent.count("dashboard.warm_snapshot") == warm_ups
