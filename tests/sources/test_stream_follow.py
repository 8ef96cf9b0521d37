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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from sources_helpers import (
    REST_FILES,
    T0,
    FakeYuniKorn,
    Seen,
    fixture_files,
    poll_live,
    rest_server_state,
    serving,
)
from support.readers import reads_every_queue
from test_observed_poll import UUID, Ring, observed, ring_handler

from dashboard.sources import services
from dashboard.sources.addresses import AddressPolicy
from dashboard.sources.client import FetchError
from dashboard.sources.models import ClusterSource
from dashboard.sources.stream import read_stream

pytestmark = pytest.mark.django_db

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
    state, ring, stream = rest_server_state(), Ring.from_fixture(), Stream()
    base = ring_handler(state, ring)

    class Handler(base):  # type: ignore[valid-type,misc]
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == STREAM:
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

    with serving(Handler) as url:
        state.url = url
        yield state, ring, stream


@dataclass
class Following:
    """A source following the stream after its first (full) poll, and the server it polls."""

    yunikorn: FakeYuniKorn
    ring: Ring
    stream: Stream
    source: ClusterSource
    fetched: int  # requests to the nodes endpoint by then: one per full poll

    def full_polls(self) -> int:
        """Full polls since the first one."""
        return self.yunikorn.requests_to(NODES) - self.fetched

    def cycle(self, after: timedelta) -> services.PollOutcome:
        """A poll of the source *after* the first poll."""
        return poll_live(self.source, T0 + after)


@pytest.fixture
def follow(served: tuple[FakeYuniKorn, Ring, Stream]) -> Following:
    yunikorn, ring, stream = served
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, follow_stream=True, reconcile_interval=600
    )
    first = poll_live(source, T0)
    assert first.status == "stored"
    source.refresh_from_db()
    assert source.last_cycle == "first poll"
    assert source.last_full_poll_at == T0
    return Following(yunikorn, ring, stream, source, yunikorn.requests_to(NODES))


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode() + b"\n"


def allocation_added(ring: Ring) -> dict[str, Any]:
    """An allocation event the scheduler publishes (it also enters the ring buffer)."""
    record = dict(ring.records[3])  # APP ADD APP_ALLOC
    record["objectID"] = "new-app"
    ring.records.append(record)
    return record


def note_added(ring: Ring) -> dict[str, Any]:
    """An informational event the scheduler publishes (it also enters the ring buffer)."""
    note = {"type": 1, "objectID": "pending-ask", "message": "Request does not fit in queue"}
    ring.records.append(note)
    return note


MINUTE = timedelta(minutes=1)


def test_an_unchanged_cluster_costs_one_idle_stream_and_one_empty_batch(
    follow: Following,
) -> None:
    source = follow.source
    outcome = follow.cycle(MINUTE)
    assert outcome.status == "unchanged"
    assert outcome.snapshot_id == source.last_snapshot_id
    assert follow.full_polls() == 0  # no full fetch of the REST answers
    assert follow.stream.queries == ["count=0"]
    assert follow.ring.starts[-1] == 15251  # the gap check from the last position
    source.refresh_from_db()
    assert source.last_cycle.startswith("stream: 0 events in ")
    assert source.last_cycle.endswith("no poll needed")
    assert source.last_full_poll_at == T0
    assert source.last_success_at == T0 + MINUTE
    assert services.source_state(source)["last_cycle"] == source.last_cycle


def test_an_allocation_event_on_the_stream_makes_a_full_poll(follow: Following) -> None:
    source = follow.source
    follow.stream.lines = [line(allocation_added(follow.ring))]
    follow.cycle(MINUTE)
    assert follow.full_polls() == 1
    source.refresh_from_db()
    assert source.last_cycle == "stream: 1 event (1 changes) -> polled"
    assert source.last_full_poll_at == T0 + MINUTE
    assert source.events_next == 15252  # the full poll read the batch as always


def test_events_between_two_streams_are_caught_by_the_batch_read(follow: Following) -> None:
    source = follow.source
    allocation_added(follow.ring)  # happened while no stream was open: not on the stream
    follow.cycle(MINUTE)
    assert follow.full_polls() == 1
    source.refresh_from_db()
    assert source.last_cycle == (
        "stream: 0 events, 1 event since the last read (1 changes) -> polled"
    )


def test_informational_events_move_the_position_without_a_poll(follow: Following) -> None:
    source = follow.source
    follow.stream.lines = [line(note_added(follow.ring))]
    assert follow.cycle(MINUTE).status == "unchanged"
    assert follow.full_polls() == 0
    source.refresh_from_db()
    assert source.events_next == 15252
    assert source.last_cycle.startswith("stream: 1 event in ")


def test_the_reconcile_interval_forces_a_full_poll_without_reading_the_stream(
    follow: Following,
) -> None:
    source = follow.source
    outcome = follow.cycle(timedelta(seconds=600))
    assert outcome.status == "unchanged"  # same state: nothing stored, but fetched
    assert follow.full_polls() == 1
    assert follow.stream.queries == []
    source.refresh_from_db()
    assert (source.last_cycle, source.last_full_poll_at) == (
        "reconcile poll",
        T0 + timedelta(seconds=600),
    )
    # within the interval again: back to the stream
    follow.cycle(timedelta(seconds=600) + MINUTE)
    assert follow.full_polls() == 1
    assert follow.stream.queries == ["count=0"]


def test_a_scheduler_without_a_stream_is_polled_and_says_so(follow: Following) -> None:
    source = follow.source
    follow.stream.status = 404
    outcome = follow.cycle(MINUTE)
    assert outcome.status == "unchanged"
    assert follow.full_polls() == 1
    source.refresh_from_db()
    assert source.last_cycle.startswith("no stream (HTTP 404 Not Found: this scheduler has")
    assert source.last_cycle.endswith("): polled")
    assert source.status == ClusterSource.Status.HEALTHY


def test_a_stream_cut_mid_line_keeps_its_complete_lines(follow: Following) -> None:
    source, stream = follow.source, follow.stream
    stream.lines = [line(note_added(follow.ring)), b'{"type": 2, "objectID": "half']
    stream.end = "cut"
    assert follow.cycle(MINUTE).status == "unchanged"
    assert follow.full_polls() == 0
    source.refresh_from_db()
    assert source.last_cycle.startswith("stream: 1 event (the stream was cut) in ")

    # a cut line that was a change is still seen, by the batch read
    allocation_added(follow.ring)
    stream.lines = [b'{"type": 2, "eventChangeType": 2, "objectID": "ha']
    follow.cycle(2 * MINUTE)
    assert follow.full_polls() == 1


def test_preemptions_seen_on_the_stream_and_in_the_batch_are_stored_once(
    follow: Following,
) -> None:
    source, ring, stream = follow.source, follow.ring, follow.stream
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
    follow.cycle(MINUTE)
    assert len(observed()) == len(runs) + 1
    # the same events again on a later stream (a replay) and in no new batch: nothing new
    stream.lines = [line(victim)]
    follow.cycle(2 * MINUTE)
    follow.cycle(3 * MINUTE)
    assert len(observed()) == len(runs) + 1
    source.refresh_from_db()
    assert source.events_next == 15253


def test_another_scheduler_instance_on_the_stream_makes_a_full_poll(follow: Following) -> None:
    source, ring = follow.source, follow.ring
    ring.uuid, ring.lowest = "11111111-2222-3333-4444-555555555555", 0
    follow.cycle(MINUTE)
    assert follow.full_polls() == 1
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
    follow: Following,
) -> None:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    source = follow.source
    follow.cycle(MINUTE)
    client = APIClient()
    client.force_authenticate(
        reads_every_queue(get_user_model().objects.create_user("viewer-stream"))
    )
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
    follow: Following,
) -> None:
    from dashboard import services as platform

    source = follow.source
    files = fixture_files(*REST_FILES.values())
    uploaded = platform.import_snapshot(files, partition="default", now=T0 + timedelta(seconds=5))
    outcome = follow.cycle(MINUTE)
    assert outcome.status == "stored"  # the source's state is the newest again
    assert outcome.snapshot_id != uploaded.pk
    assert follow.stream.queries == []
    source.refresh_from_db()
    assert source.last_cycle == "another snapshot is the partition's newest: polled"
