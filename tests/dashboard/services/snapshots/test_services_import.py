"""Imports wired through the services and the API, on every shared fixture and the bad files.

Valid configs and snapshots are stored with their rows; invalid ones are refused
with an error naming the line or key, nothing is stored, and the refusal lands in
the alert feed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import factories
import pytest
from django.conf import settings
from rest_framework.test import APIClient

from dashboard import models, services

FIXTURES = Path(settings.DASHBOARD_FIXTURES_DIR)
BAD = Path(__file__).parents[2] / "data" / "bad"

VALID_CONFIGS = sorted(p.name for p in (FIXTURES / "config").glob("*.yaml"))
INVALID_CONFIGS = sorted(p.name for p in (FIXTURES / "config" / "invalid").glob("*.yaml"))
PITFALL_CONFIGS = sorted(p.name for p in (FIXTURES / "config" / "pitfalls").glob("*.yaml"))
REST_FILES = sorted(p.name for p in (FIXTURES / "rest").glob("*.json"))
# files the scheduler's REST API serves that hold a whole snapshot on their own
SELF_CONTAINED = {"partition_queues.json", "fullstatedump.json"}

BAD_CONFIGS = sorted(p.name for p in BAD.glob("*.yaml"))
BAD_SNAPSHOTS = sorted(p.name for p in BAD.glob("*.json"))

# Bad inputs of our own, beside the importers' set: (file name, content, expected in error)
OWN_BAD_SNAPSHOTS = [
    ("truncated.json", b'{"queues": {"name": "root"', "truncated"),
    ("unknown-queue.json", None, "root.nope"),
    ("negative.json", None, "allocations[0].resources.vcore"),
]


def _stored() -> tuple[int, ...]:
    return (
        models.Partition.objects.count(),
        models.ConfigVersion.objects.count(),
        models.ConfigQueue.objects.count(),
        models.ClusterSnapshot.objects.count(),
        models.SnapshotQueue.objects.count(),
        models.AllocationSpan.objects.count(),
        models.QuotaChange.objects.count(),
    )


@pytest.fixture
def nothing_stored() -> Iterator[None]:
    """Asserts that the test body stores no partition, config, snapshot or change row."""
    before = _stored()
    yield
    assert _stored() == before


@pytest.mark.django_db
@pytest.mark.parametrize("name", VALID_CONFIGS)
def test_every_valid_config_fixture_imports(name: str) -> None:
    """Each fixture config becomes a version per partition with one row per queue."""
    data = (FIXTURES / "config" / name).read_bytes()
    result = services.import_config(data, filename=name)
    assert result.versions
    for version in result.versions:
        paths = set(version.queues.values_list("path", flat=True))
        assert "root" in paths
        assert version.checksum
        assert version.queues.count() == len(paths)
        # every queue but root hangs under its parent row
        for q in version.queues.exclude(path="root"):
            assert q.parent is not None
            assert q.parent.path == q.path.rpartition(".")[0]


@pytest.mark.django_db
@pytest.mark.parametrize("name", INVALID_CONFIGS)
def test_invalid_config_fixtures_are_refused_and_nothing_is_stored(
    name: str, nothing_stored: None
) -> None:
    """The scheduler refuses these; the error names the line; the failure raises an alert."""
    data = (FIXTURES / "config" / "invalid" / name).read_bytes()
    with pytest.raises(services.ImportRejected) as err:
        services.import_config(data, filename=name)
    assert err.value.field.startswith("line ")
    alert = models.Alert.objects.get(kind=models.Alert.Kind.IMPORT_FAILED)
    assert err.value.message in alert.message


@pytest.mark.django_db
def test_seed_form_of_the_delay_is_refused_with_the_correct_form() -> None:
    """quota.preemption.delay under resources: is rejected and the error shows the property."""
    name = "quota-delay-under-resources.yaml"
    data = (FIXTURES / "config" / "invalid" / name).read_bytes()
    with pytest.raises(services.ImportRejected) as err:
        services.import_config(data, filename=name)
    assert "quota.preemption.delay" in err.value.message
    assert "properties" in err.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("name", PITFALL_CONFIGS)
def test_pitfall_configs_import_with_a_warning(name: str) -> None:
    """Valid YAML in which quota preemption never fires: imported, with a warning and alert."""
    data = (FIXTURES / "config" / "pitfalls" / name).read_bytes()
    [version] = services.import_config(data, filename=name).versions
    assert version.warnings
    assert any("never" in w or "no quota preemption" in w for w in version.warnings), (
        version.warnings
    )
    assert models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_WARNING).count() == len(
        version.warnings
    )


@pytest.mark.django_db
@pytest.mark.parametrize("name", BAD_CONFIGS)
def test_bad_config_files_are_refused_and_nothing_is_stored(
    name: str, nothing_stored: None
) -> None:
    """Malformed YAML, alias bombs, duplicate keys, absurd quantities...: a clear error."""
    data = (BAD / name).read_bytes()
    with pytest.raises(services.ServiceError) as err:
        services.import_config(data, filename=name)
    assert err.value.field
    assert err.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("name", BAD_SNAPSHOTS)
def test_bad_snapshot_files_are_refused_and_nothing_is_stored(
    name: str, nothing_stored: None
) -> None:
    """Bad JSON snapshots: refused with the file and key named."""
    with pytest.raises(services.ServiceError) as err:
        services.import_snapshot({name: (BAD / name).read_bytes()})
    assert err.value.field
    assert models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_FAILED).count() == 1


def _own_bad(name: str, content: bytes | None) -> bytes:
    if content is not None:
        return content
    doc = factories.small_scenario()
    if name == "unknown-queue.json":
        doc["allocations"][0]["queue"] = "root.nope"
    else:
        doc["allocations"][0]["resources"] = {"vcore": -5}
    return json.dumps(doc).encode()


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "content", "expected"), OWN_BAD_SNAPSHOTS)
def test_own_bad_scenarios_are_refused(
    name: str, content: bytes | None, expected: str, nothing_stored: None
) -> None:
    with pytest.raises(services.ServiceError) as err:
        services.import_snapshot({name: _own_bad(name, content)})
    assert expected in str(err.value)


def test_at_least_ten_bad_files_are_exercised() -> None:
    assert len(BAD_CONFIGS) + len(BAD_SNAPSHOTS) + len(OWN_BAD_SNAPSHOTS) >= 10


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(SELF_CONTAINED))
def test_self_contained_rest_files_import_alone(name: str) -> None:
    """One REST file (the queue tree) or the full state dump is a snapshot on its own."""
    snapshot = services.import_snapshot({name: (FIXTURES / "rest" / name).read_bytes()})
    assert snapshot.partition.name == "default"
    assert snapshot.queues.filter(path="root.batch").exists()


@pytest.mark.django_db
def test_rest_folder_imports_with_allocations_and_asks() -> None:
    """Every REST file of the fixtures together: the acme-ml cluster with its pending ask."""
    files = {n: (FIXTURES / "rest" / n).read_bytes() for n in REST_FILES}
    snapshot = services.import_snapshot(files)
    assert services.snapshot_nodes(snapshot).count() == 3
    assert services.snapshot_allocations(snapshot).count() == 19
    assert snapshot.asks.count() == 1
    batch = snapshot.queues.get(path="root.batch")
    # usage is allocated minus preempting (the fixtures' README, surprise 6)
    assert batch.usage["vcore"] == 10000
    assert batch.preempting["vcore"] == 2000


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(set(REST_FILES) - SELF_CONTAINED))
def test_partial_rest_files_alone_are_refused_with_the_reason(
    name: str, nothing_stored: None
) -> None:
    with pytest.raises(services.ImportRejected) as err:
        services.import_snapshot({name: (FIXTURES / "rest" / name).read_bytes()})
    assert "queue tree" in err.value.message


@pytest.mark.django_db
def test_snapshot_round_trips_through_the_engine_contract() -> None:
    """A stored snapshot exported as scenario JSON imports again to the same checksum."""
    snapshot = factories.SnapshotFactory.create()
    doc = services.scenario_document(snapshot)
    again = services.import_snapshot({"again.json": json.dumps(doc).encode()})
    assert again.checksum == snapshot.checksum


@pytest.mark.django_db
def test_config_import_of_a_lower_max_schedules_a_quota_change() -> None:
    """previous -> live config: root.batch max vcore 14 -> 10 starts its 5 minute timer.
    (The state dump without its own config, which would be the config in force.)"""
    cfg = FIXTURES / "config"
    dump = json.loads((FIXTURES / "rest/fullstatedump.json").read_bytes())
    del dump["config"]
    services.import_snapshot({"fullstatedump.json": json.dumps(dump).encode()})
    first = services.import_config(
        (cfg / "queues-nested-gpu-previous.yaml").read_bytes(), filename="previous.yaml"
    )
    assert first.changes == ()
    live = services.import_config((cfg / "queues-nested-gpu.yaml").read_bytes(), filename="q.yaml")
    [change] = live.changes
    assert change.queue_path == "root.batch"
    assert (change.old_max or {})["vcore"] == 14000
    assert (change.new_max or {})["vcore"] == 10000
    assert change.delay == 300.0
    # the state dump shows the preemption under way: 12 cores allocated, 2 of them being
    # preempted; the scheduler's usage is its allocated (engine.md 5.1), over the new max
    assert change.state == models.QuotaChange.State.WAITING
    # a change the cluster made says so: the type lowered, from what, the type over
    assert change.reason.startswith("the cluster lowered the max of vcore ("), change.reason
    assert "usage over the max in vcore (vcore 12 cores against vcore 10 cores)" in change.reason
    assert "; timer started: usage exceeds the new max" in change.reason


@pytest.mark.django_db
def test_config_diff_between_versions() -> None:
    cfg = FIXTURES / "config"
    services.import_config((cfg / "queues-nested-gpu.yaml").read_bytes(), filename="live.yaml")
    result = services.import_config(
        (cfg / "queues-nested-gpu-proposed.yaml").read_bytes(), filename="proposed.yaml"
    )
    [version] = result.versions
    changes = services.config_diff(version)
    texts = [c["text"] for c in changes]
    assert any(c["queue"] == "root.batch" and c["field"] == "max" for c in changes), texts
    assert any(c["field"] == "quota_preemption_delay" for c in changes), texts


@pytest.mark.django_db
def test_oversized_upload_is_refused_naming_the_limit(
    settings: object, nothing_stored: None
) -> None:
    settings.DASHBOARD_MAX_UPLOAD_BYTES = 100  # type: ignore[attr-defined]
    with pytest.raises(services.UploadTooLarge) as err:
        services.import_config(b"partitions:\n" + b"#" * 200, filename="big.yaml")
    assert "100 bytes" in err.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("name", VALID_CONFIGS)
def test_api_upload_of_each_config(staff_client: APIClient, name: str) -> None:
    with (FIXTURES / "config" / name).open("rb") as fh:
        response = staff_client.post("/api/configs/", {"file": fh}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["versions"][0]["partition"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", INVALID_CONFIGS + BAD_CONFIGS[:5])
def test_api_upload_of_a_bad_config_is_a_400_naming_the_location(
    staff_client: APIClient, name: str, nothing_stored: None
) -> None:
    path = FIXTURES / "config" / "invalid" / name
    if not path.exists():
        path = BAD / name
    with path.open("rb") as fh:
        response = staff_client.post("/api/configs/", {"file": fh}, format="multipart")
    assert response.status_code == 400
    [(location, [message])] = response.json().items()
    assert location
    assert message


@pytest.mark.django_db
@pytest.mark.parametrize("names", [["partition_queues.json"], ["fullstatedump.json"], REST_FILES])
def test_api_upload_of_snapshots(staff_client: APIClient, names: list[str]) -> None:
    handles = [(FIXTURES / "rest" / n).open("rb") for n in names]
    try:
        response = staff_client.post("/api/snapshots/", {"files": handles}, format="multipart")
    finally:
        for h in handles:
            h.close()
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["partition"] == "default"
    assert body["counts"]["queues"] >= 8


@pytest.mark.django_db
def test_api_upload_of_a_scenario_json_body(staff_client: APIClient) -> None:
    response = staff_client.post("/api/snapshots/", factories.small_scenario(), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["source_kind"] == "scenario"


@pytest.mark.django_db
def test_api_upload_above_the_limit_is_413(
    staff_client: APIClient, settings: object, nothing_stored: None
) -> None:
    settings.DASHBOARD_MAX_UPLOAD_BYTES = 1000  # type: ignore[attr-defined]
    data = (FIXTURES / "rest" / "fullstatedump.json").open("rb")
    with data:
        response = staff_client.post("/api/snapshots/", {"files": [data]}, format="multipart")
    assert response.status_code == 413
    assert response.json()["limit_bytes"] == 1000
    assert "1000 bytes" in json.dumps(response.json())


@pytest.mark.django_db
def test_api_json_body_above_the_limit_is_413(
    staff_client: APIClient, settings: object, nothing_stored: None
) -> None:
    settings.DASHBOARD_MAX_UPLOAD_BYTES = 500  # type: ignore[attr-defined]
    response = staff_client.post("/api/snapshots/", factories.small_scenario(), format="json")
    assert response.status_code == 413
    assert "500 bytes" in response.json()["body"][0]


@pytest.mark.django_db
def test_poller_imports_keep_warnings_on_the_row_without_alerts() -> None:
    """alert_warnings=False: the REST warnings stay on the snapshot, no alert per poll."""
    files = {"partition_queues.json": (FIXTURES / "rest" / "partition_queues.json").read_bytes()}
    snapshot = services.import_snapshot(files, alert_warnings=False)
    assert snapshot.warnings
    assert not models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_WARNING).exists()
    services.import_snapshot(files)
    assert models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_WARNING).exists()


@pytest.mark.django_db
def test_state_dump_partition_is_chosen_by_source_partition(nothing_stored: None) -> None:
    dump = {"fullstatedump.json": (FIXTURES / "rest" / "fullstatedump.json").read_bytes()}
    with pytest.raises(services.ImportRejected) as err:
        services.import_snapshot(dump, source_partition="no-such-partition")
    assert "no-such-partition" in err.value.message
    models.Alert.objects.all().delete()


@pytest.mark.django_db
def test_source_alert_kinds_have_labels() -> None:
    alert = services.raise_alert(models.Alert.Kind.SOURCE_FAILING, "poll failed")
    assert alert.get_kind_display() == "Cluster source failing"


@pytest.mark.django_db
def test_stored_allocation_rows_hold_exactly_the_scenario_allocations() -> None:
    """Allocations are written by plain INSERTs (no model instances): every column reads
    back as the scenario said, JSON as a dict, on SQLite and on PostgreSQL alike."""
    scenario = factories.small_scenario()
    scenario["allocations"][0].update(
        resources={"vcore": 1000, "memory": 2**40, "nvidia.com/gpu": 1},
        priority=-7,
        originator=True,
        allow_preemption=False,
        required_node=True,
        created=1788162480.125,
    )
    snap = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    rows = {r.key: r for r in services.snapshot_allocations(snap).all()}
    assert sorted(rows) == sorted(a["key"] for a in scenario["allocations"])
    for a in scenario["allocations"]:
        row = rows[a["key"]]
        assert (row.partition_id, row.first_seen, row.gone_in) == (snap.partition_id, snap.pk, None)
        assert (row.app, row.queue, row.node) == (a["app"], a["queue"], a["node"])
        assert row.resources == a["resources"]
        assert row.priority == a.get("priority", 0)
        assert row.originator is a.get("originator", False)
        assert row.allow_preemption is a.get("allow_preemption", True)
        assert row.required_node is a.get("required_node", False)
        assert row.preempted is False
        assert row.created == a["created"]
    # JSON lookups work on the stored values (a real JSON column, not text)
    assert services.snapshot_allocations(snap).filter(resources__memory=2**40).count() == 1
    with pytest.raises(TypeError, match="not a concrete column"):
        services.insert_rows(models.ClusterSnapshot, ["queues"], [])
