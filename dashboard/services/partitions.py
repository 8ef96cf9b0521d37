"""A partition's latest snapshot and latest config version."""

from __future__ import annotations

from dashboard import models


def latest_snapshot(partition: models.Partition) -> models.ClusterSnapshot | None:
    return partition.snapshots.order_by("-captured_at", "-id").first()


def latest_config(partition: models.Partition) -> models.ConfigVersion | None:
    return partition.configs.order_by("-number").first()
