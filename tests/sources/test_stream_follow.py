"""A source following the scheduler's event stream polls in full only when something
changed, when a reconcile poll is due, or when the scheduler has no stream.

The local HTTP server serves the shared acme-ml REST answers, the event ring buffer of
``test_observed_poll`` and ``/ws/v1/events/stream`` as yunikorn-core writes it: a
first ``{"InstanceUUID": ...}`` line, then one event record per line, no heartbeat.
Requests to the REST endpoints are counted to tell a full poll from a stream cycle.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sources_helpers import (
    REST,
    REST_FILES,
    T0,
    FakeYuniKorn,
    Seen,
    SleepRecorder,
    make_handler,
)
from test_observed_poll import UUID, Ring, observed

from dashboard.sources import services
from dashboard.sources.addresses import AddressPolicy
from dashboard.sources.client import FetchError
from dashboard.sources.models import ClusterSource
from dashboard.sources.stream import read_stream

pytestmark = pytest.mark.django_db

EVENTS = "/ws/v1/events/batch"
STREAM = "/ws/v1/events/stream"
NODES = "/ws/v1/partition/default/nodes"
WINDOW = 0.4


@dataclass
class Stream:
    """What the next stream connection sends after its InstanceUUID line."""

    lines: list[bytes] = field(default_factory=list)
    status: int = 200
    end: str = "hold"  # "hold" the connection open, "close" it, or "cut" mid-line
    queries: list[str] = field(default_factory=list)


@pytest.fixture
def served(settings: Any) -> Iterator[tuple[FakeYuniKorn, Ring, Stream]]:
    settings.SOURCES_STREAM_WINDOW_SECONDS = WINDOW
    state = FakeYuniKorn(bodies={p: (REST / n).read_bytes() for p, n in REST_FILES.items()})
    records = json.loads((REST / "events_batch.json").read_bytes())["EventRecords"]
    ring = Ring(lowest=15230, records=list(records))
    stream = Stream()
    base = make_handler(state)

    class Handler(base):  # type: ignore[valid-type,misc]
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == EVENTS:
                start = int(parse_qs(parts.query)["start"][0])
                ring.starts.append(start)
                self._send(200, ring.answer(start))
            elif parts.path == STREAM:
                self._stream(parts.query)
            else:
                super().do_GET()

        def _stream(self, query: str) -> None:
            stream.queries.append(query)
            with state.lock:
                state.seen.append(Seen(STREAM, {k.lower(): v for k, v in self.headers.items()}))
            if stream.status != 200:
                self._send(stream.status, b'{"StatusCode":404,"Message":"not found"}')
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(json.dumps({"InstanceUUID": ring.uuid}).encode() + b"\n")
            self.wfile.flush()
            for line in stream.lines:
                self.wfile.write(line)
                self.wfile.flush()
            if stream.end == "hold":
                time.sleep(WINDOW * 3)  # the client ends the read when its window is up

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state, ring, stream
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def cycle(source: ClusterSource, at: Any) -> services.PollOutcome:
    return services.poll_source(
        source.pk,
        now=at,
        force=True,
        fetch=services.default_fetcher(sleep=SleepRecorder()),
        events=services.default_events_fetcher(sleep=SleepRecorder()),
    )


def following(yunikorn: FakeYuniKorn) -> ClusterSource:
    """A source following the stream, after its first (full) poll."""
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, follow_stream=True, reconcile_interval=600
    )
    first = cycle(source, T0)
    assert first.status == "stored"
    source.refresh_from_db()
    assert source.last_cycle == "first poll"
    assert source.last_full_poll_at == T0
    return source


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode() + b"\n"


def allocation_added(ring: Ring) -> dict[str, Any]:
    """An allocation event the scheduler publishes (it also enters the ring buffer)."""
    record = dict(ring.records[3])  # APP ADD APP_ALLOC
    record["objectID"] = "new-app"
    ring.records.append(record)
    return record


def test_an_unchanged_cluster_costs_one_idle_stream_and_one_empty_batch(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    outcome = cycle(source, T0 + timedelta(minutes=1))
    assert outcome.status == "unchanged"
    assert outcome.snapshot_id == source.last_snapshot_id
    assert yunikorn.requests_to(NODES) == fetched  # no full fetch of the REST answers
    assert stream.queries == ["count=0"]
    assert ring.starts[-1] == 15251  # the gap check from the last position
    source.refresh_from_db()
    assert source.last_cycle.startswith("stream: 0 events in ")
    assert source.last_cycle.endswith("no poll needed")
    assert source.last_full_poll_at == T0
    assert source.last_success_at == T0 + timedelta(minutes=1)
    assert services.source_state(source)["last_cycle"] == source.last_cycle


def test_an_allocation_event_on_the_stream_makes_a_full_poll(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    stream.lines = [line(allocation_added(ring))]
    at = T0 + timedelta(minutes=1)
    cycle(source, at)
    assert yunikorn.requests_to(NODES) == fetched + 1
    source.refresh_from_db()
    assert source.last_cycle == "stream: 1 event (1 changes) -> polled"
    assert source.last_full_poll_at == at
    assert source.events_next == 15252  # the full poll read the batch as always


def test_events_between_two_streams_are_caught_by_the_batch_read(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, _stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    allocation_added(ring)  # happened while no stream was open: not on the stream
    cycle(source, T0 + timedelta(minutes=1))
    assert yunikorn.requests_to(NODES) == fetched + 1
    source.refresh_from_db()
    assert source.last_cycle == (
        "stream: 0 events, 1 event since the last read (1 changes) -> polled"
    )


def test_informational_events_move_the_position_without_a_poll(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    note = {"type": 1, "objectID": "pending-ask", "message": "Request does not fit in queue"}
    ring.records.append(note)
    stream.lines = [line(note)]
    assert cycle(source, T0 + timedelta(minutes=1)).status == "unchanged"
    assert yunikorn.requests_to(NODES) == fetched
    source.refresh_from_db()
    assert source.events_next == 15252
    assert source.last_cycle.startswith("stream: 1 event in ")


def test_the_reconcile_interval_forces_a_full_poll_without_reading_the_stream(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, _ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    at = T0 + timedelta(seconds=600)
    outcome = cycle(source, at)
    assert outcome.status == "unchanged"  # same state: nothing stored, but fetched
    assert yunikorn.requests_to(NODES) == fetched + 1
    assert stream.queries == []
    source.refresh_from_db()
    assert (source.last_cycle, source.last_full_poll_at) == ("reconcile poll", at)
    # within the interval again: back to the stream
    cycle(source, at + timedelta(minutes=1))
    assert yunikorn.requests_to(NODES) == fetched + 1
    assert stream.queries == ["count=0"]


def test_a_scheduler_without_a_stream_is_polled_and_says_so(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, _ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    stream.status = 404
    outcome = cycle(source, T0 + timedelta(minutes=1))
    assert outcome.status == "unchanged"
    assert yunikorn.requests_to(NODES) == fetched + 1
    source.refresh_from_db()
    assert source.last_cycle.startswith("no stream (HTTP 404 Not Found: this scheduler has")
    assert source.last_cycle.endswith("): polled")
    assert source.status == ClusterSource.Status.HEALTHY


def test_a_stream_cut_mid_line_keeps_its_complete_lines(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    note = {"type": 1, "objectID": "pending-ask", "message": "Request does not fit in queue"}
    ring.records.append(note)
    stream.lines = [line(note), b'{"type": 2, "objectID": "half']
    stream.end = "cut"
    assert cycle(source, T0 + timedelta(minutes=1)).status == "unchanged"
    assert yunikorn.requests_to(NODES) == fetched
    source.refresh_from_db()
    assert source.last_cycle.startswith("stream: 1 event (the stream was cut) in ")

    # a cut line that was a change is still seen, by the batch read
    allocation_added(ring)
    stream.lines = [b'{"type": 2, "eventChangeType": 2, "objectID": "ha']
    cycle(source, T0 + timedelta(minutes=2))
    assert yunikorn.requests_to(NODES) == fetched + 1


def test_preemptions_seen_on_the_stream_and_in_the_batch_are_stored_once(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    source = following(yunikorn)
    runs = observed()
    victim = dict(ring.records[17])
    victim["objectID"] = "new-victim-key"
    victim["message"] = (
        "Preempted by ask-2 from application bert-finetune-ft12 in root.production.training"
    )
    released = {
        "type": 2,
        "objectID": "bert-finetune-ft12",
        "referenceID": "new-victim-key",
        "eventChangeType": 3,
        "eventChangeDetail": 501,
    }
    ring.records += [victim, released]
    stream.lines = [line(victim), line(released)]
    cycle(source, T0 + timedelta(minutes=1))
    assert len(observed()) == len(runs) + 1
    # the same events again on a later stream (a replay) and in no new batch: nothing new
    stream.lines = [line(victim)]
    cycle(source, T0 + timedelta(minutes=2))
    cycle(source, T0 + timedelta(minutes=3))
    assert len(observed()) == len(runs) + 1
    source.refresh_from_db()
    assert source.events_next == 15253


def test_another_scheduler_instance_on_the_stream_makes_a_full_poll(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, _stream = served
    source = following(yunikorn)
    fetched = yunikorn.requests_to(NODES)
    ring.uuid, ring.lowest = "11111111-2222-3333-4444-555555555555", 0
    cycle(source, T0 + timedelta(minutes=1))
    assert yunikorn.requests_to(NODES) == fetched + 1
    source.refresh_from_db()
    assert source.last_cycle == "stream: 0 events, another scheduler instance -> polled"
    assert source.events_instance == ring.uuid


def test_the_address_policy_applies_to_the_stream(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, _ring, stream = served
    loopback = AddressPolicy(denied=(ipaddress.ip_network("127.0.0.0/8"),))
    with pytest.raises(FetchError, match="address refused"):
        read_stream(yunikorn.url, window=WINDOW, addresses=loopback)
    assert stream.queries == []


def test_the_stream_read_sends_the_token_and_stops_at_a_change(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    yunikorn, ring, stream = served
    stream.lines = [line(allocation_added(ring)), line(allocation_added(ring))]
    read = read_stream(
        yunikorn.url, window=5.0, token="s3cret", stop=lambda r: bool(r.get("eventChangeType"))
    )
    assert read.instance_uuid == UUID
    assert (read.ended, len(read.records)) == ("stopped", 1)
    seen = [s for s in yunikorn.seen if s.path == STREAM]
    assert seen[-1].headers["authorization"] == "Bearer s3cret"


def test_a_following_source_shows_its_settings_and_last_cycle_in_the_api(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    yunikorn, _ring, _stream = served
    source = following(yunikorn)
    cycle(source, T0 + timedelta(minutes=1))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("viewer-stream"))
    shown = client.get(f"/api/sources/{source.pk}/").json()
    assert shown["follow_stream"] is True
    assert shown["reconcile_interval"] == 600
    assert shown["last_cycle"].endswith("no poll needed")
    staff = get_user_model().objects.create_user("staff-stream", is_staff=True)
    client.force_authenticate(staff)
    changed = client.patch(f"/api/sources/{source.pk}/", {"reconcile_interval": 1}, format="json")
    assert changed.status_code == 400
    assert "reconcile_interval" in changed.json()


def test_a_snapshot_uploaded_meanwhile_makes_the_next_cycle_a_full_poll(
    served: tuple[FakeYuniKorn, Ring, Stream],
) -> None:
    from dashboard import services as platform

    yunikorn, _ring, stream = served
    source = following(yunikorn)
    files = {n: (REST / n).read_bytes() for n in REST_FILES.values()}
    uploaded = platform.import_snapshot(files, partition="default", now=T0 + timedelta(seconds=5))
    outcome = cycle(source, T0 + timedelta(minutes=1))
    assert outcome.status == "stored"  # the source's state is the newest again
    assert outcome.snapshot_id != uploaded.pk
    assert stream.queries == []
    source.refresh_from_db()
    assert source.last_cycle == "another snapshot is the partition's newest: polled"
