"""The import commands' default cluster, from an empty database: a snapshot makes the
cluster its answers name, a config naming no cluster goes to ``default`` or to the only
cluster there is (the two-cluster cases: test_clusters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management.base import BaseCommand
from two_clusters import LAB_WEST, acme_folder, manage

from dashboard import models

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_dir(fixtures_dir: Path, tmp_path: Path) -> Path:
    """The shared acme-ml fixtures as the two-cluster tests import them."""
    return acme_folder(fixtures_dir, tmp_path / "acme")


def test_a_snapshot_makes_the_cluster_its_answers_name() -> None:
    snapshot_id = manage("import_snapshot", str(LAB_WEST / "rest")).strip()
    snapshot = models.ClusterSnapshot.objects.select_related("partition__cluster").get(
        pk=int(snapshot_id)
    )
    assert (snapshot.partition.cluster.name, snapshot.partition.name) == ("lab-west", "default")
    assert snapshot.partition.cluster.cluster_id == "lab-west"


def test_the_default_cluster_of_a_config_learns_its_id_from_the_first_snapshot(
    acme_dir: Path,
) -> None:
    """A config imported with no cluster goes to ``default``; the acme-ml answers then
    land in that cluster (not in a new one) and give it the scheduler's clusterId."""
    manage("import_config", str(acme_dir / "config" / "queues-small.yaml"))
    manage("import_snapshot", str(acme_dir / "rest"))
    (cluster,) = models.Cluster.objects.all()
    assert (cluster.name, cluster.cluster_id) == ("default", "mycluster")
    (partition,) = models.Partition.objects.all()
    assert (partition.configs.count(), partition.snapshots.count()) == (1, 1)


def test_a_config_naming_no_cluster_goes_to_the_only_one(acme_dir: Path) -> None:
    manage("import_config", str(LAB_WEST / "config" / "queues-v1.yaml"), "--cluster", "lab-west")
    out = manage("import_config", str(LAB_WEST / "config" / "queues-v2.yaml"))
    assert "lab-west/default v2" in out
    assert list(models.Cluster.objects.values_list("name", flat=True)) == ["lab-west"]


def test_the_commands_say_what_cluster_is_the_default() -> None:
    from dashboard.management.commands import import_config, import_snapshot

    def help_of(command: type[BaseCommand]) -> str:
        return " ".join(command().create_parser("manage.py", "x").format_help().split())

    assert "default the only cluster" in help_of(import_config.Command)
    assert "default the answers' clusterId" in help_of(import_snapshot.Command)
