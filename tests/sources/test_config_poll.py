"""Each poll of a live source also reads the scheduler's config in force
(``/ws/v1/config``): a changed config becomes one new config version, whose learned
changes run by the scheduler's clock and which makes the dashboard's planned changes
applied; the same config stores nothing; a failing endpoint is a note, never a failed
poll.

Served from a local HTTP server with the shared acme-ml answers, events and config
(the ``served`` fixture of ``test_observed_poll``, plus ``/ws/v1/config``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sources_helpers import REST, T0, FakeYuniKorn, poll_live
from test_observed_poll import Ring, served

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

__all__ = ["served"]  # the fixture, used by name

pytestmark = pytest.mark.django_db

CONFIG = "/ws/v1/config"
GI = 2**30
QUEUE_MAX_EVENT = datetime.fromtimestamp(1788256470.012887, tz=UTC)  # root.batch, 09:54:30
Clock = dm.QuotaChange.ClockSource


def answer(batch_vcore: str | None = None, checksum: str | None = None) -> dict[str, Any]:
    """The shared /ws/v1/config answer, root.batch's max vcore set to *batch_vcore*."""
    doc: dict[str, Any] = json.loads((REST / "config.json").read_text())
    if batch_vcore is not None:
        batch = doc["Partitions"][0]["Queues"][0]["Queues"][2]
        assert batch["Name"] == "batch"
        batch["Resources"]["Max"]["vcore"] = batch_vcore
    if checksum is not None:
        doc["Checksum"] = checksum
    return doc


def _api(source: ClusterSource, client: Any) -> dict[str, Any]:
    answer = client.get(f"/api/sources/{source.pk}/")
    assert answer.status_code == 200, answer.content
    data: dict[str, Any] = answer.json()
    return data


def poll(source: ClusterSource, at: datetime) -> services.PollOutcome:
    """A poll that also reads the scheduler's config."""
    return poll_live(source, at, config=True)


def versions() -> list[tuple[int, str, str]]:
    return list(
        dm.ConfigVersion.objects.order_by("number").values_list("number", "filename", "checksum")
    )


def test_a_changed_config_is_one_new_version_and_its_change_runs_by_the_schedulers_clock(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    """Poll 1: the scheduler runs root.batch at 14 cores (v1). Poll 2: it has lowered it
    to 10 (its QUEUE_MAX event read in the same poll): v2, and the learned change starts
    at the event, not at the poll. Poll 3: the same config, nothing new."""
    yunikorn, ring = served
    records = ring.records
    ring.records = records[:15]  # up to the QUEUE_MAX event (15245), not yet seen
    yunikorn.set_json(CONFIG, answer("14", checksum="PREVIOUS"))
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll(source, T0).status == "stored"
    assert versions() == [(1, "config.json", "PREVIOUS")]
    assert not dm.QuotaChange.objects.exists()

    ring.records = records[:16]  # the QUEUE_MAX event, not the enforcement yet
    yunikorn.set_json(CONFIG, answer())
    t1 = T0 + timedelta(minutes=1)
    assert poll(source, t1).status == "unchanged"  # the snapshot; the config changed
    checksum = answer()["Checksum"]
    assert versions() == [(1, "config.json", "PREVIOUS"), (2, "config.json", checksum)]
    (change,) = dm.QuotaChange.objects.filter(queue_path="root.batch")
    assert (change.clock_source, change.changed_at) == (Clock.EVENT, QUEUE_MAX_EVENT)
    assert change.new_max == {"vcore": 10000, "memory": 48 * GI}
    source.refresh_from_db()
    assert (source.config_checksum, source.config_seen_at) == (checksum, t1)
    assert source.last_config_error == ""

    t2 = T0 + timedelta(minutes=2)
    poll(source, t2)
    assert len(versions()) == 2
    assert dm.QuotaChange.objects.count() == 1
    source.refresh_from_db()
    assert source.config_seen_at == t2
    # asked as JSON, like every other endpoint
    asked = [s for s in yunikorn.seen if s.path == CONFIG]
    assert len(asked) == 3
    assert all(s.headers["accept"] == "application/json" for s in asked)


def test_a_planned_change_is_applied_when_the_polled_config_shows_it(
    served: tuple[FakeYuniKorn, Ring], staff: Any
) -> None:
    """root.batch lowered to 8 cores in the dashboard is planned; it becomes applied when
    the scheduler's config shows 8 cores, not before."""
    yunikorn, _ring = served
    yunikorn.set_json(CONFIG, answer())
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll(source, T0)
    partition = dm.Partition.objects.get(name="default")
    planned = platform.schedule_quota_change(
        partition,
        "root.batch",
        new_max={"vcore": 8000, "memory": 48 * GI},
        user=staff,
        now=T0 + timedelta(minutes=1),
    )
    assert planned.is_planned
    poll(source, T0 + timedelta(minutes=2))  # the config does not show it yet
    planned.refresh_from_db()
    assert planned.is_planned
    assert len(versions()) == 1

    yunikorn.set_json(CONFIG, answer("8", checksum="EIGHT"))
    poll(source, T0 + timedelta(minutes=3))
    planned.refresh_from_db()
    assert not planned.is_planned
    assert planned.applied_at is not None
    assert [v[2] for v in versions()] == [answer()["Checksum"], "EIGHT"]
    assert dm.QuotaChange.objects.count() == 1  # no second, learned change for the same max


def test_a_failing_config_endpoint_is_a_note_and_the_poll_stores_the_snapshot(
    served: tuple[FakeYuniKorn, Ring], staff_client: Any
) -> None:
    yunikorn, _ring = served
    yunikorn.set_json(CONFIG, answer())
    yunikorn.modes[CONFIG] = "500"
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    outcome = poll(source, T0)
    assert outcome.status == "stored"
    assert outcome.snapshot_id is not None
    assert dm.PreemptionRun.objects.filter(trigger="observed").exists()  # events still read
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.last_config_error == (
        "config fetch /ws/v1/config: HTTP 500 Internal Server Error (after 3 tries)"
    )
    assert versions() == []
    state = _api(source, staff_client)
    assert state["last_config_error"] == source.last_config_error
    assert state["config_checksum"] == ""

    # an answer the importer refuses: a note that does not quote the answer
    yunikorn.modes[CONFIG] = "ok"
    yunikorn.set_json(CONFIG, answer("forty"))
    assert poll(source, T0 + timedelta(minutes=1)).status == "unchanged"
    source.refresh_from_db()
    assert source.last_config_error.startswith(
        "config refused: /ws/v1/config is not a config the dashboard can read"
    )
    assert "forty" not in source.last_config_error
    assert versions() == []

    # healthy again: stored, the note cleared, the checksum and time shown
    yunikorn.set_json(CONFIG, answer())
    t2 = T0 + timedelta(minutes=2)
    poll(source, t2)
    source.refresh_from_db()
    assert source.last_config_error == ""
    assert len(versions()) == 1
    state = _api(source, staff_client)
    assert state["config_checksum"] == answer()["Checksum"]
    assert state["config_seen_at"] == t2.isoformat().replace("+00:00", "Z")


def test_the_source_card_shows_the_config_last_seen(
    served: tuple[FakeYuniKorn, Ring], client: Any, staff: Any
) -> None:
    yunikorn, _ring = served
    yunikorn.set_json(CONFIG, answer())
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll(source, T0)
    client.force_login(staff)
    page = client.get("/queues/").content.decode()
    assert 'data-testid="source-config"' in page
    assert answer()["Checksum"][:10] in page
    assert "seen 2026-09-01 10:00:00 UTC" in page


def test_a_config_without_the_sources_partition_is_a_note(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, _ring = served
    doc = answer()
    doc["Partitions"][0]["Name"] = "gpu"
    yunikorn.set_json(CONFIG, doc)
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll(source, T0).status == "stored"
    source.refresh_from_db()
    assert source.last_config_error == (
        "config not stored: the scheduler's config has no partition 'default'"
    )
    assert source.config_checksum == ""
    assert versions() == []
    assert dm.ClusterSnapshot.objects.count() == 1
