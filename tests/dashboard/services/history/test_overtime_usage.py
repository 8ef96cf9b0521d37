"""A queue's usage over a window: time-weighted share of the guaranteed used, time above the
max, spans clipped at the window's edges, open spans, absent queues, and the rows read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard import models
from dashboard.services import ServiceError
from dashboard.services.history.overtime import (
    QueueSpan,
    Window,
    check_window,
    parse_instant,
    queue_spans,
    queue_usage_over_time,
    usage_over_time,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
HOUR = 3600.0


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def span(
    start: float,
    end: float | None,
    used: int,
    guaranteed: int | None = None,
    maximum: int | None = None,
    *,
    present: bool = True,
) -> QueueSpan:
    return QueueSpan(
        at(start).timestamp(),
        None if end is None else at(end).timestamp(),
        {"vcore": used},
        {"vcore": used},
        None if guaranteed is None else {"vcore": guaranteed},
        None if maximum is None else {"vcore": maximum},
        present,
    )


def test_share_of_guaranteed_is_time_weighted_and_caps_usage_above_it() -> None:
    """1 h at 2 of 4 guaranteed (50 %), 3 h at 6 of 4 (100 %: above it uses all of it):
    (0.5 * 1 + 1.0 * 3) / 4 = 87.5 %; the mean used is (2 + 18) / 4 = 5."""
    spans = [span(0, 1, 2, guaranteed=4), span(1, 4, 6, guaranteed=4)]
    v = usage_over_time(spans, Window(at(0), at(4)), now=at(10))
    (vcore,) = v.types
    assert (vcore.guaranteed_share, vcore.mean_used, vcore.guaranteed_seconds) == (
        0.875,
        5.0,
        4 * HOUR,
    )
    assert vcore.guaranteed_seconds == v.covered_seconds


def test_time_above_max_counts_only_time_strictly_above() -> None:
    """At the max is not above it; a type without a max is never above."""
    spans = [span(0, 1, 8, maximum=8), span(1, 3, 9, maximum=8), span(3, 4, 20)]
    v = usage_over_time(spans, Window(at(0), at(4)), now=at(10))
    (vcore,) = v.types
    assert (vcore.above_max_seconds, vcore.max_seconds) == (2 * HOUR, 3 * HOUR)
    assert v.above_max_any_seconds == 2 * HOUR


def test_window_edges_clip_spans() -> None:
    """A span begun before the window counts from its start; one running past its end
    counts until its end."""
    spans = [span(0, 2, 10, guaranteed=10, maximum=5), span(2, 6, 0, guaranteed=10, maximum=5)]
    v = usage_over_time(spans, Window(at(1), at(3)), now=at(10))
    (vcore,) = v.types
    assert (v.covered_seconds, vcore.above_max_seconds) == (2 * HOUR, 1 * HOUR)
    assert (vcore.mean_used, vcore.guaranteed_share) == (5.0, 0.5)
    assert [p.at for p in v.series] == [at(1), at(2)]


def test_open_span_lasts_until_now_when_the_window_ends_later() -> None:
    """The newest snapshot's span is open: it lasts until the window's end, or until now
    when the window ends later (the future is not counted)."""
    spans = [span(0, None, 3, maximum=1)]
    later = usage_over_time(spans, Window(at(0), at(10)), now=at(4))
    assert (later.covered_seconds, later.above_max_any_seconds) == (4 * HOUR, 4 * HOUR)
    earlier = usage_over_time(spans, Window(at(0), at(2)), now=at(4))
    assert earlier.covered_seconds == 2 * HOUR


def test_time_before_the_first_snapshot_and_absent_queue_are_not_covered() -> None:
    """Before the first snapshot nothing is known; a snapshot without the queue counts as
    neither used nor limited, and the mean is over the time the queue was seen."""
    spans = [
        span(1, 2, 4, guaranteed=8),
        QueueSpan(at(2).timestamp(), at(3).timestamp(), present=False),
        span(3, 4, 8, guaranteed=8),
    ]
    v = usage_over_time(spans, Window(at(0), at(4)), now=at(10))
    (vcore,) = v.types
    assert (v.covered_seconds, vcore.mean_used, vcore.guaranteed_share) == (2 * HOUR, 6.0, 0.75)
    assert [p.present for p in v.series] == [True, False, True]


def test_no_guaranteed_gives_no_share_and_types_are_apart() -> None:
    """A type without a guaranteed (or with 0) has no share; memory and vcore are separate."""
    spans = [QueueSpan(0.0, 3600.0, {"vcore": 2, "memory": 5}, {}, {"vcore": 4, "memory": 0}, None)]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    v = usage_over_time(spans, Window(epoch, epoch + timedelta(hours=1)), now=at(2))
    by_type = {f.type: f for f in v.types}
    assert (by_type["memory"].guaranteed_share, by_type["vcore"].guaranteed_share) == (None, 0.5)


def test_series_merges_equal_neighbours_and_resamples_to_the_highest() -> None:
    """Equal consecutive spans make one step; past the point limit each interval shows its
    highest used (a short peak above the max stays visible)."""
    spans = [span(0, 1, 2), span(1, 2, 2), span(2, 3, 5)]
    v = usage_over_time(spans, Window(at(0), at(3)), now=at(3))
    assert [(p.at, p.used["vcore"]) for p in v.series] == [(at(0), 2), (at(2), 5)]
    assert v.resampled_seconds is None

    minutes = [span(i / 60, (i + 1) / 60, 100 if i == 61 else 1 + i % 2) for i in range(240)]
    r = usage_over_time(minutes, Window(at(0), at(4)), now=at(4), points=4)
    assert r.resampled_seconds == HOUR
    assert [(p.at, p.used["vcore"]) for p in r.series] == [
        (at(0), 2),
        (at(1), 100),
        (at(2), 2),
        (at(3), 2),
    ]


@pytest.mark.parametrize(
    ("start", "end", "field", "words"),
    [
        (at(2), at(1), "end", "must be after start"),
        (at(1), at(1), "end", "must be after start"),
        (at(0) - timedelta(days=400), at(0), "start", "at most 366 days"),
        (datetime(1999, 12, 31, tzinfo=UTC), at(0), "start", "before 2000"),
        (at(0), at(0) + timedelta(days=3), "end", "more than a day after now"),
        (at(1), None, "start", "not before the window's end (now)"),
        (None, datetime(1999, 1, 1, tzinfo=UTC), "end", "before 2000"),
        (None, datetime(1, 1, 5, tzinfo=UTC), "end", "before 2000"),
    ],
)
def test_absurd_windows_are_refused_naming_the_parameter(
    start: datetime | None, end: datetime | None, field: str, words: str
) -> None:
    with pytest.raises(ServiceError) as caught:
        check_window(start, end, now=at(0))
    assert (caught.value.field, words in caught.value.message) == (field, True)


def test_window_defaults_and_iso_text() -> None:
    """No end: now; no start: 30 days before the end; a time without offset is UTC."""
    assert check_window(None, None, now=at(0)) == Window(at(0) - timedelta(days=30), at(0))
    assert parse_instant("2026-11-01T01:00", "start") == at(1)
    assert parse_instant("2026-11-01T02:00:00+01:00", "start") == at(1)
    assert parse_instant("", "start") is None
    with pytest.raises(ServiceError) as caught:
        parse_instant("yesterday", "end")
    assert caught.value.field == "end"


# ------------------------------------------------------------------ read from the rows


def _snapshot(partition: models.Partition, hours: float) -> models.ClusterSnapshot:
    return models.ClusterSnapshot.objects.create(
        partition=partition,
        source_kind="scenario",
        captured_at=at(hours),
        imported_at=at(hours),
        scenario={},
    )


def _queue(snapshot: models.ClusterSnapshot, path: str, used: int, maximum: int) -> None:
    models.SnapshotQueue.objects.create(
        snapshot=snapshot,
        path=path,
        name=path.rsplit(".", 1)[-1],
        usage={"vcore": used},
        allocated={"vcore": used + 1},
        guaranteed={"vcore": 4},
        max={"vcore": maximum},
    )


@pytest.mark.django_db
def test_spans_are_read_from_the_snapshots_queue_rows() -> None:
    """The snapshot before the window gives the state at its start; a snapshot without the
    queue is an absent span; the newest is open; another partition's rows are not read."""
    cluster = models.Cluster.objects.create(name="c1")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    other = models.Partition.objects.create(cluster=cluster, name="other")
    _queue(_snapshot(p, 0), "root.a", 2, 8)
    _snapshot(p, 2)  # root.a absent
    _queue(_snapshot(p, 3), "root.a", 9, 8)
    _queue(_snapshot(other, 1), "root.a", 100, 1)
    window = Window(at(1), at(5))
    spans = queue_spans(p, "root.a", window)
    assert [(s.start, s.end, s.present, dict(s.used)) for s in spans] == [
        (at(0).timestamp(), at(2).timestamp(), True, {"vcore": 2}),
        (at(2).timestamp(), at(3).timestamp(), False, {}),
        (at(3).timestamp(), None, True, {"vcore": 9}),
    ]
    assert spans[0].allocated == {"vcore": 3}
    v = queue_usage_over_time(p, "root.a", window, now=at(5))
    assert (v.covered_seconds, v.above_max_any_seconds) == (3 * HOUR, 2 * HOUR)


@pytest.mark.django_db
def test_a_later_snapshot_ends_the_last_span_of_the_window() -> None:
    cluster = models.Cluster.objects.create(name="c1")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    _queue(_snapshot(p, 0), "root.a", 2, 8)
    _snapshot(p, 2)  # the queue is gone from here on
    v = queue_usage_over_time(p, "root.a", Window(at(0), at(1)), now=at(9))
    assert v.covered_seconds == HOUR
    spans = queue_spans(p, "root.a", Window(at(0), at(1)))
    assert [s.end for s in spans] == [at(2).timestamp()]


@pytest.mark.django_db
def test_unknown_queue_is_refused_naming_queue() -> None:
    cluster = models.Cluster.objects.create(name="c1")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    _queue(_snapshot(p, 0), "root.a", 2, 8)
    with pytest.raises(ServiceError) as caught:
        queue_usage_over_time(p, "root.nope", Window(at(0), at(1)), now=at(2))
    assert caught.value.field == "queue"
    # a queue of the newest snapshot is known, even when the window holds no snapshot
    early = queue_usage_over_time(p, "root.a", Window(at(-5), at(-4)), now=at(2))
    assert (early.covered_seconds, early.series) == (0.0, ())
