"""A REST folder's config.json (the scheduler's /ws/v1/config) becomes the partition's
config version when it differs from the version in force, in the snapshot's transaction:
maxes the cluster changed are learned on the scheduler's clock, changes planned in the
dashboard become applied; the same config again stores nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rest_answers import CLUSTER_B, GI, at, import_config_file, plan_reports_max, rest_files

from dashboard import models, services

pytestmark = pytest.mark.django_db

Clock = models.QuotaChange.ClockSource


def lab_west_folder() -> dict[str, bytes]:
    """lab-west's REST answers with its /ws/v1/config (config/config.json)."""
    return {
        **rest_files(CLUSTER_B / "rest"),
        "config.json": (CLUSTER_B / "config" / "config.json").read_bytes(),
    }


def test_a_rest_folder_config_is_stored_once(fixtures_dir: Path) -> None:
    """The shared folder's config.json on an empty partition is its first version; the
    same folder again stores no new version."""
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=at("2026-09-01T10:05"))
    partition = models.Partition.objects.get(name="default")
    (version,) = partition.configs.all()
    assert version.filename == "config.json"
    assert version.parsed["source_format"] == "scheduler"
    assert (
        version.checksum
        == json.loads((fixtures_dir / "rest" / "config.json").read_text())["Checksum"]
    )
    # REST answers carry no capture time: the snapshot's (and the config's) is the import's
    assert version.imported_at == at("2026-09-01T10:05")
    assert version.queues.get(path="root.batch").max == {"vcore": 10000, "memory": 48 * GI}
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=at("2026-09-01T10:10"))
    assert partition.configs.count() == 1
    assert partition.snapshots.count() == 2


def test_the_same_config_uploaded_before_stores_nothing(fixtures_dir: Path) -> None:
    """queues-nested-gpu.yaml is the config the scheduler serves: no second version."""
    import_config_file(fixtures_dir / "config" / "queues-nested-gpu.yaml", at("2026-09-01T09:00"))
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=at("2026-09-01T10:05"))
    partition = models.Partition.objects.get(name="default")
    assert list(partition.configs.values_list("filename", flat=True)) == ["queues-nested-gpu.yaml"]


def test_a_max_the_cluster_lowered_is_learned_on_the_schedulers_clock() -> None:
    """queues-v2.yaml (root.reports 12 cores) was in force; lab-west's folder without its
    events (so only the config tells the change) shows its live config (11 cores): a new
    version, and the learned change starts at the scheduler's change (13:58, from
    quotaPreemptionStartTime 14:18 less its 20m delay), never at the import (14:30)."""
    import_config_file(CLUSTER_B / "config" / "queues-v2.yaml", at("2026-10-14T13:31"))
    files = lab_west_folder()
    del files["events_batch.json"]
    services.import_snapshot(files, now=at("2026-10-14T14:30"))
    partition = models.Partition.objects.get(name="default")
    assert list(partition.configs.order_by("number").values_list("filename", flat=True)) == [
        "queues-v2.yaml",
        "config.json",
    ]
    (change,) = models.QuotaChange.objects.filter(queue_path="root.reports")
    assert change.clock_source == Clock.START_TIME
    assert change.changed_at == at("2026-10-14T13:58")
    assert change.deadline == at("2026-10-14T14:18")
    assert change.new_max == {"vcore": 11000, "memory": 48 * GI}
    assert services.queue_settings(partition, "root.reports").max == {
        "vcore": 11000,
        "memory": 48 * GI,
    }


def test_a_max_the_scheduler_enforced_already_is_learned_once_on_its_event(
    fixtures_dir: Path,
) -> None:
    """acme-ml: the previous config (root.batch 14 cores) was in force; the folder's
    events show the scheduler lowered it to 10 (QUEUE_MAX event 15245, 09:54:30) and
    enforced it, and its config (10 cores) says the same: one learned change, timed by
    the event (not the import), done because the scheduler enforced it."""
    import_config_file(
        fixtures_dir / "config" / "queues-nested-gpu-previous.yaml", at("2026-09-01T09:00")
    )
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=at("2026-11-24T09:00"))
    partition = models.Partition.objects.get(name="default")
    assert partition.configs.count() == 2
    (change,) = models.QuotaChange.objects.filter(queue_path="root.batch")
    assert (change.learned, change.clock_source, change.state) == (
        True,
        Clock.EVENT,
        models.QuotaChange.State.DONE,
    )
    assert change.changed_at == datetime.fromtimestamp(1788256470.012887, tz=UTC)
    assert change.new_max == {"vcore": 10000, "memory": 48 * GI}
    assert services.queue_settings(partition, "root.batch").max == {
        "vcore": 10000,
        "memory": 48 * GI,
    }


def test_a_planned_change_becomes_applied_when_the_folders_config_shows_it(staff: Any) -> None:
    """root.reports lowered to 11 cores in the dashboard at 13:40 is planned; lab-west's
    folder with its live config (11 cores) makes it applied at the scheduler's change
    (the 13:58 QUEUE_MAX), its timer the scheduler's (14:18); one new version."""
    import_config_file(CLUSTER_B / "config" / "queues-v2.yaml", at("2026-10-14T13:31"))
    planned = plan_reports_max(11, staff, at("2026-10-14T13:40"))
    assert planned.is_planned
    services.import_snapshot(lab_west_folder(), now=at("2026-10-14T14:05"))
    planned.refresh_from_db()
    assert not planned.is_planned
    assert planned.applied_at == at("2026-10-14T13:58")
    assert planned.deadline == at("2026-10-14T14:18")
    partition = planned.partition
    versions = list(partition.configs.order_by("number"))
    assert [v.filename for v in versions] == ["queues-v2.yaml", "config.json"]
    assert versions[1].warnings[0].startswith("config.json: Partitions[0].Queues[0].Queues[0]")
    # the planned change was the only max change: the config learned nothing else
    assert models.QuotaChange.objects.filter(queue_path="root.reports").count() == 1
    services.import_snapshot(lab_west_folder(), now=at("2026-10-14T14:10"))
    assert partition.configs.count() == 2


def test_a_refused_config_stores_nothing_of_the_folder(fixtures_dir: Path) -> None:
    """A config.json the importer refuses refuses the folder (one transaction)."""
    files = rest_files(fixtures_dir / "rest")
    doc = json.loads(files["config.json"])
    doc["Partitions"][0]["Queues"][0]["Queues"][0]["Resources"]["Max"]["vcore"] = "1"
    files["config.json"] = json.dumps(doc).encode()
    with pytest.raises(services.ImportRejected) as refused:
        services.import_snapshot(files, now=at("2026-09-01T10:05"))
    assert str(refused.value).startswith("config.json: Partitions[0].Queues[0].Queues[0]")
    assert models.ClusterSnapshot.objects.count() == 0
    assert models.ConfigVersion.objects.count() == 0


def test_the_version_in_force_is_compared_by_the_partition_alone(fixtures_dir: Path) -> None:
    """A config in force holding two partitions: the folder's config of ``default`` is the
    same as its part, so nothing is stored (the other partition is not a difference)."""
    text = (fixtures_dir / "config" / "queues-nested-gpu.yaml").read_text().rstrip() + (
        "\n  - name: gpu\n    queues:\n      - name: root\n        queues:\n"
        "          - name: train\n"
    )
    services.import_config(text.encode(), filename="two.yaml", now=at("2026-09-01T09:00"))
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=at("2026-09-01T10:05"))
    partition = models.Partition.objects.get(name="default")
    assert list(partition.configs.values_list("filename", flat=True)) == ["two.yaml"]
