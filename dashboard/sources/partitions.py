"""A source and the stored partition its snapshots go to, both ways."""

from __future__ import annotations

from dashboard import models as dm
from dashboard.sources.models import ClusterSource


def source_partition(source: ClusterSource) -> dm.Partition | None:
    """The stored partition a source's snapshots go to (None before its first snapshot)."""
    return dm.Partition.objects.filter(cluster_id=source.cluster_id, name=source.partition).first()


def sources_for_partition(partition: dm.Partition | str) -> list[ClusterSource]:
    """The sources of *partition* (a name: of that partition in any cluster)."""
    if isinstance(partition, str):
        return list(ClusterSource.objects.filter(partition=partition))
    return list(
        ClusterSource.objects.filter(cluster_id=partition.cluster_id, partition=partition.name)
    )
