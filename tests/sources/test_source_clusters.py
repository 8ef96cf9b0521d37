"""Sources of two clusters that both read partition ``default``: each poll stores its
snapshot in its own source's cluster."""

from __future__ import annotations

from typing import Any

import pytest
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db


def _poll(source: ClusterSource, at: Any) -> Any:
    return services.poll_source(
        source.pk, now=at, fetch=services.default_fetcher(sleep=SleepRecorder())
    )


def test_two_clusters_poll_partition_default_side_by_side(yunikorn: FakeYuniKorn) -> None:
    east = dm.Cluster.objects.create(name="east")
    west = dm.Cluster.objects.create(name="west")
    sources = {
        c.name: ClusterSource.objects.create(
            name=f"yk-{c.name}", base_url=yunikorn.url, partition="default", cluster=c
        )
        for c in (east, west)
    }
    for name, source in sources.items():
        outcome = _poll(source, T0)
        assert outcome.status == "stored", outcome.error
        snapshot = dm.ClusterSnapshot.objects.select_related("partition__cluster").get(
            pk=outcome.snapshot_id
        )
        assert (snapshot.partition.cluster.name, snapshot.partition.name) == (name, "default")
        assert services.source_partition(source) == snapshot.partition
    east_p, west_p = (services.source_partition(s) for s in sources.values())
    assert east_p is not None
    assert west_p is not None
    assert east_p.pk != west_p.pk
    assert [east_p.snapshots.count(), west_p.snapshots.count()] == [1, 1]
    # the scheduler's clusterId is learnt by each cluster its answers went to
    assert {c.name: c.cluster_id for c in dm.Cluster.objects.all()} == {
        "east": "mycluster",
        "west": "mycluster",
    }
    state = services.source_state(sources["west"])
    assert (state["cluster"], state["partition"]) == ("west", "default")


def test_a_source_naming_no_cluster_joins_the_only_one(yunikorn: FakeYuniKorn) -> None:
    only = dm.Cluster.objects.create(name="lab")
    source = ClusterSource.objects.create(name="yk", base_url=yunikorn.url)
    assert source.cluster == only
    outcome = _poll(source, T0)
    assert dm.ClusterSnapshot.objects.get(pk=outcome.snapshot_id).partition.cluster == only


def test_a_source_reading_another_scheduler_fails_without_storing(
    yunikorn: FakeYuniKorn,
) -> None:
    """The cluster has learnt another clusterId: the poll fails, naming the cluster and not
    quoting the answer, and nothing is stored."""
    lab = dm.Cluster.objects.create(name="lab-west", cluster_id="lab-west")
    source = ClusterSource.objects.create(name="yk", base_url=yunikorn.url, cluster=lab)
    outcome = _poll(source, T0)
    assert outcome.status == "failed"
    assert "clusterId is not the one cluster lab-west holds the state of" in outcome.error
    assert "mycluster" not in outcome.error
    assert dm.ClusterSnapshot.objects.count() == 0
