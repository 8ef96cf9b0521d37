"""A live source reads the scheduler's events between snapshot polls and stores its
preemptions as observed runs: from the last event id, once each, across scheduler
restarts and batches that end between a quota preemption's victims and its summary.

The local HTTP server serves the shared acme-ml REST answers and an event ring buffer
as yunikorn-core keeps it (``?start=N`` answers from id N, nothing once N has left
the buffer, always ``InstanceUUID``, ``LowestID`` and ``HighestID``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sources_helpers import (
    REST,
    T0,
    FakeYuniKorn,
    make_handler,
    poll_live,
    rest_server_state,
    serving,
)
from support.readers import reads_every_queue

from dashboard import models as dm
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

EVENTS = "/ws/v1/events/batch"
UUID = "8e4cef37-9d9e-50c7-83c1-37235e42adbf"
ASK = "0561dd16-bf2d-5231-b2cf-650f76e87d42"


@dataclass
class Ring:
    lowest: int
    records: list[dict[str, Any]]
    uuid: str = UUID
    starts: list[int] = field(default_factory=list)

    def answer(self, start: int) -> bytes:
        highest = self.lowest + len(self.records) - 1
        found = self.lowest <= start <= highest
        return json.dumps(
            {
                "InstanceUUID": self.uuid,
                "LowestID": self.lowest,
                "HighestID": highest,
                "EventRecords": self.records[start - self.lowest :] if found else None,
            }
        ).encode()

    @classmethod
    def from_fixture(cls) -> Ring:
        """The shared events batch, as the buffer holding ids 15230 to 15250."""
        records = json.loads((REST / "events_batch.json").read_bytes())["EventRecords"]
        return cls(lowest=15230, records=list(records))


def ring_handler(state: FakeYuniKorn, ring: Ring) -> type[BaseHTTPRequestHandler]:
    """The REST test server's handler, with the events batch endpoint answered by *ring*."""
    base = make_handler(state)

    class Handler(base):  # type: ignore[valid-type,misc]
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != EVENTS:
                super().do_GET()
                return
            start = int(parse_qs(parts.query)["start"][0])
            ring.starts.append(start)
            self._send(200, ring.answer(start))

    return Handler


@pytest.fixture
def served() -> Iterator[tuple[FakeYuniKorn, Ring]]:
    state, ring = rest_server_state(), Ring.from_fixture()
    with serving(ring_handler(state, ring)) as url:
        state.url = url
        yield state, ring


def _api(source: ClusterSource) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(
        reads_every_queue(get_user_model().objects.create_user("viewer-events"))
    )
    answer = client.get(f"/api/sources/{source.pk}/")
    assert answer.status_code == 200, answer.content
    data: dict[str, Any] = answer.json()
    return data


def observed() -> list[tuple[str, str, list[str]]]:
    return [
        (r.kind, r.queue, sorted(r.victims.values_list("allocation_key", flat=True)))
        for r in dm.PreemptionRun.objects.filter(trigger="observed").order_by("queued_at", "id")
    ]


def test_a_new_source_reads_from_the_buffers_start_then_only_new_events(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, ring = served
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    first = poll_live(source, T0)
    assert first.status == "stored"
    # event 0 has left the buffer: asked again from LowestID
    assert ring.starts == [0, 15230]
    source.refresh_from_db()
    assert (source.events_instance, source.events_next) == (UUID, 15251)
    shown = _api(source)
    assert (shown["events_instance"], shown["events_next"], shown["last_events_error"]) == (
        UUID,
        15251,
        "",
    )
    assert "no longer in the scheduler's event buffer" not in source.last_events_error
    runs = observed()
    assert [(k, q) for k, q, _ in runs] == [
        ("preempt", "root.production.training"),
        ("quota", "root.batch"),
    ]
    assert len(runs[1][2]) == 2
    quota = dm.PreemptionRun.objects.get(trigger="observed", kind="quota")
    assert quota.snapshot_id == first.snapshot_id
    assert quota.queued_at < T0  # the event's time, not the poll's

    # nothing new: one request from the next id, nothing stored
    second = poll_live(source, T0 + timedelta(minutes=1))
    assert second.status == "unchanged"
    assert ring.starts[2:] == [15251]
    assert observed() == runs

    # the scheduler preempts for another ask: only that event is read
    victim = dict(ring.records[17])
    victim["objectID"] = "new-victim-key"
    victim["message"] = (
        "Preempted by ask-2 from application bert-finetune-ft12 in root.production.training"
    )
    ring.records.append(victim)
    poll_live(source, T0 + timedelta(minutes=2))
    assert ring.starts[3:] == [15251]
    source.refresh_from_db()
    assert source.events_next == 15252
    assert len(observed()) == 3
    run = dm.PreemptionRun.objects.get(trigger="observed", request__ask="ask-2")
    assert list(run.victims.values_list("allocation_key", flat=True)) == ["new-victim-key"]


def test_a_quota_preemption_split_across_polls_is_stored_once_with_all_its_victims(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, ring = served
    summary = ring.records.pop()  # the batch ends between the victims and the summary
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll_live(source, T0)
    assert [k for k, _, _ in observed()] == ["preempt"]
    source.refresh_from_db()
    assert len(source.events_waiting) == 2
    ring.records.append(summary)
    poll_live(source, T0 + timedelta(minutes=1))
    source.refresh_from_db()
    assert source.events_waiting == []
    (quota,) = [r for r in observed() if r[0] == "quota"]
    assert len(quota[2]) == 2
    assert dm.PreemptionRun.objects.get(kind="quota").claimed == {
        "memory": 8 * 2**30,
        "pods": 2,
        "vcore": 2000,
    }


def test_a_restarted_scheduler_is_read_from_its_new_buffers_start(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, ring = served
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll_live(source, T0)
    before = observed()
    # a new scheduler instance: ids start again at 0; the same preemptions happen again
    ring.uuid, ring.lowest = "11111111-2222-3333-4444-555555555555", 0
    poll_live(source, T0 + timedelta(minutes=1))
    assert ring.starts[-2:] == [15251, 0]
    source.refresh_from_db()
    assert (source.events_instance, source.events_next) == (ring.uuid, 21)
    assert len(observed()) == 2 * len(before)
    # and polling again reads nothing twice
    poll_live(source, T0 + timedelta(minutes=2))
    assert ring.starts[-1] == 21
    assert len(observed()) == 2 * len(before)


def test_an_upload_and_a_poll_of_the_same_events_store_them_once(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    from dashboard import services as platform

    yunikorn, _ring = served
    files = {
        p.name: p.read_bytes() for p in sorted(REST.glob("*.json")) if "statedump" not in p.name
    }
    platform.import_snapshot(files)
    uploaded = observed()
    assert len(uploaded) == 2
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll_live(source, T0)
    assert observed() == uploaded


def test_a_failing_events_endpoint_is_noted_and_the_poll_still_succeeds(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, ring = served
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    ring.records = [{"type": "not a number"}]
    outcome = poll_live(source, T0)
    assert outcome.status == "stored"
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert "events refused" in source.last_events_error
    assert "not a number" not in source.last_events_error  # the answer's text is only logged
    assert source.events_next is None  # read again from the start next time
    assert observed() == []


def test_events_that_left_the_buffer_before_a_poll_are_noted(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, ring = served
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, events_instance=UUID, events_next=100
    )
    poll_live(source, T0)
    assert ring.starts == [100, 15230]
    source.refresh_from_db()
    assert source.last_events_error == (
        "events 100 to 15229 left the scheduler's event buffer before they were read"
    )
    assert source.events_next == 15251
    assert len(observed()) == 2
