"""Template tags the pages include: source state and a change's config patch.

``{% load sources %}`` then:

- ``{% source_states %}`` or ``{% source_states partition %}`` - a card with each
  cluster source's state (healthy / failing since / last error / last success /
  last snapshot); nothing when there is no source.  ``partition`` may be a
  Partition or its name.
- ``{% queue_usage partition path %}`` - the scheduler's per-user and per-group usage
  of a queue, as the partition's source last read it; nothing without a source.
- ``{% change_config change %}`` - for a quota change of a partition with a
  source: the ``kubectl patch`` command and the new queues.yaml; nothing for
  other partitions.

Tokens are never rendered (only "set" / "not set"); all text is auto-escaped.
"""

from __future__ import annotations

from typing import Any

from django import template

from dashboard import models as dm
from dashboard.services import ServiceError
from dashboard.sources import configpatch, services, ugm
from dashboard.sources.models import ClusterSource

register = template.Library()


@register.inclusion_tag("sources/_source_states.html")
def source_states(partition: dm.Partition | str | None = None) -> dict[str, Any]:
    qs = ClusterSource.objects.select_related("cluster")
    if isinstance(partition, dm.Partition):
        qs = qs.filter(cluster_id=partition.cluster_id, partition=partition.name)
    elif partition:
        qs = qs.filter(partition=partition)
    return {"source_states": [services.source_state(s) for s in qs.order_by("name")]}


@register.inclusion_tag("sources/_change_config.html")
def change_config(change: dm.QuotaChange) -> dict[str, Any]:
    if configpatch.source_for_change(change) is None:
        return {"config": None, "error": ""}
    try:
        return {"config": configpatch.change_config(change).to_dict(), "error": ""}
    except ServiceError as exc:
        return {"config": None, "error": f"{exc.field}: {exc.message}"}


@register.inclusion_tag("sources/_queue_usage.html")
def queue_usage(partition: dm.Partition | None, path: str) -> dict[str, Any]:
    source = (
        ClusterSource.objects.filter(cluster_id=partition.cluster_id, partition=partition.name)
        .order_by("name")
        .first()
        if partition is not None
        else None
    )
    if source is None or not source.usage_tracking:
        return {"usage": None}
    return {"usage": ugm.queue_usage(source, path)}
