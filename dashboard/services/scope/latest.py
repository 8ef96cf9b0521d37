"""A partition's latest snapshot and latest config version."""

from __future__ import annotations

from django.db.models import Max

from dashboard import models


def latest_snapshot(
    partition: models.Partition, *, defer_state: bool = False
) -> models.ClusterSnapshot | None:
    """The newest snapshot; *defer_state* leaves its scenario document unread (a large
    JSON a caller that only needs the rows should not decode)."""
    qs = partition.snapshots.order_by("-captured_at", "-id")
    if defer_state:
        qs = qs.defer("scenario")
    return qs.first()


def latest_config(partition: models.Partition) -> models.ConfigVersion | None:
    """The config in force: the newest imported version (a planned one never is)."""
    return partition.configs.filter(planned=False).order_by("-number").first()


def next_config_number(partition: models.Partition) -> int:
    """Versions are numbered in import order, planned ones included."""
    highest = partition.configs.aggregate(n=Max("number"))["n"]
    return (highest or 0) + 1
