"""Polling the scheduler's events incrementally from a local HTTP server.

The server keeps an event ring buffer as yunikorn-core does
(``pkg/events/event_ringbuffer.go``): ``?start=N`` answers the records from id N
(at most ``count``), nothing when N has left the buffer, and always ``LowestID``
and ``HighestID``. The poller follows :attr:`EventsImport.next_start`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sources_helpers import serving

from dashboard.importers.events import (
    EventRecord,
    EventsImport,
    ObservedPreemption,
    ObservedQuotaPreemption,
    Victim,
    parse_events,
)
from dashboard.sources.client import FetchError, FetchPolicy, fetch_events

CLUSTER_B = Path(__file__).parents[1] / "dashboard" / "data" / "cluster-b" / "rest"


@dataclass
class RingBuffer:
    lowest: int
    records: list[dict[str, Any]]
    token: str = "s3cret"
    asked: list[str] = field(default_factory=list)

    @property
    def highest(self) -> int:
        return self.lowest + len(self.records) - 1

    def answer(self, start: int, count: int) -> dict[str, Any]:
        found = self.lowest <= start <= self.highest
        first = start - self.lowest
        return {
            "InstanceUUID": "b00f3a33-0f07-591d-9fed-d7fa4ad551ba",
            "LowestID": self.lowest,
            "HighestID": self.highest,
            "EventRecords": self.records[first : first + count] if found else None,
        }


@pytest.fixture
def ring() -> Iterator[tuple[RingBuffer, str]]:
    doc = json.loads((CLUSTER_B / "events_batch.json").read_bytes())
    buf = RingBuffer(lowest=48100, records=doc["EventRecords"])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            buf.asked.append(self.path)
            if self.headers.get("Authorization") != f"Bearer {buf.token}":
                status, body = 401, b'{"message":"no token"}'
            elif parts.path != "/ws/v1/events/batch":
                status, body = 404, b'{"message":"not found"}'
            else:
                q = parse_qs(parts.query)
                start = int(q["start"][0])
                count = int(q.get("count", ["10000"])[0])
                status = 200
                body = json.dumps(buf.answer(start, count), separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler, daemon_threads=False) as url:
        yield buf, url


def poll(url: str, start: int, count: int | None = None, token: str = "s3cret") -> EventsImport:
    body = fetch_events(url, start, count=count, token=token, policy=FetchPolicy(retries=0))
    return parse_events(body, start=start)


def test_incremental_polls_read_every_event_once(ring: tuple[RingBuffer, str]) -> None:
    buf, url = ring
    first = poll(url, 0)  # a new source starts below the buffer: told where it begins
    assert first.records == ()
    assert first.next_start == 48100
    assert "no longer in the scheduler's event buffer" in first.warnings[0]
    seen: list[EventRecord] = []
    start = first.next_start
    for _ in range(5):
        batch = poll(url, start, count=5)
        seen.extend(batch.records)
        start = batch.next_start
    assert [e.id for e in seen] == list(range(48100, 48113))
    assert start == 48113
    whole = parse_events(json.dumps(buf.answer(48100, 10000)).encode(), start=48100)
    assert tuple(seen) == whole.records
    # nothing new: the same start again, no records, no warning
    idle = poll(url, start)
    assert (idle.records, idle.next_start, idle.warnings) == ((), 48113, ())
    # the scheduler records one more max change: the next poll reads just that one
    buf.records.append(
        {
            "type": 4,
            "objectID": "root.reports",
            "timestampNano": 1791986500000000000,
            "eventChangeType": 1,
            "eventChangeDetail": 403,
            "resource": {"resources": {"vcore": {"value": 12000}}},
        }
    )
    new = poll(url, start)
    assert [e.id for e in new.records] == [48113]
    assert [(c.queue, c.new_max) for c in new.queue_max_changes] == [
        ("root.reports", {"vcore": 12000})
    ]
    assert buf.asked[-1] == "/ws/v1/events/batch?start=48113"


def test_observed_preemptions_arrive_in_the_batches_that_hold_them(
    ring: tuple[RingBuffer, str],
) -> None:
    _, url = ring
    quota: list[ObservedQuotaPreemption] = []
    preempt: list[ObservedPreemption] = []
    start = 48100
    waiting: tuple[Victim, ...] = ()
    while True:  # batches of 4 split the two quota victims (48107, 48108) from each other
        body = fetch_events(url, start, count=4, token="s3cret", policy=FetchPolicy(retries=0))
        batch = parse_events(body, start=start, carry=waiting)
        if not batch.records:
            break
        quota.extend(batch.quota_preemptions)
        preempt.extend(batch.preemptions)
        start, waiting = batch.next_start, batch.waiting
    (summary,) = quota
    assert (summary.queue, summary.claimed) == (
        "root.reports",
        {"memory": 4 * 2**30, "pods": 2, "vcore": 2000},
    )
    assert [v.event_id for v in summary.victims] == [48107, 48108]
    assert waiting == ()
    assert [p.victims[0].app for p in preempt] == ["notebook-erin", "notebook-dave"]


def test_token_is_required_and_never_echoed(ring: tuple[RingBuffer, str]) -> None:
    _, url = ring
    with pytest.raises(FetchError) as info:
        fetch_events(url, 48100, token="wrong-token", policy=FetchPolicy(retries=0))
    assert info.value.endpoint == "/ws/v1/events/batch"
    assert "401" in info.value.message
    assert "wrong-token" not in str(info.value)
