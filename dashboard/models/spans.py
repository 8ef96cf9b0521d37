"""Nodes, applications and allocations, stored once per span of snapshots they were seen in."""

from __future__ import annotations

from django.db import models

from dashboard.models.clusters import Partition


class Span(models.Model):
    """Something stored once for the consecutive snapshots of a partition it was seen in.

    A snapshot of the partition holds the span when ``first_seen <= snapshot.id`` and
    the span is still current (``gone_in`` null) or ended after it (``gone_in >
    snapshot.id``); ``gone_in`` is the first later snapshot without it, or with it
    changed (a changed item is a new span). Snapshot ids, not foreign keys: deleting
    a snapshot leaves the spans of its neighbours intact. Read through
    ``services.snapshot_allocations``, ``snapshot_nodes``, ``snapshot_applications``.
    """

    # no index of its own: each span model's unique (partition, key, first_seen) leads with it
    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    first_seen = models.BigIntegerField(help_text="id of the first snapshot holding it")
    gone_in = models.BigIntegerField(
        null=True, blank=True, help_text="id of the first later snapshot without it"
    )
    digest = models.CharField(max_length=16, help_text="hash of its content, to spot changes")

    class Meta:
        abstract = True


class NodeSpan(Span):
    """A node over the snapshots it was seen in: ``capacity`` is what YuniKorn can schedule on it.

    That is ``reported_capacity`` (the node's capacity as reported) minus
    ``occupied`` (what pods not scheduled by YuniKorn hold, ``foreign_pods``).
    """

    node_id = models.CharField(max_length=255)
    capacity = models.JSONField(default=dict)
    allocated = models.JSONField(default=dict, blank=True)
    schedulable = models.BooleanField(default=True)
    reported_capacity = models.JSONField(
        default=dict, blank=True, help_text="capacity as reported (capacity + occupied)"
    )
    occupied = models.JSONField(
        default=dict, blank=True, help_text="what pods not scheduled by YuniKorn hold"
    )
    foreign_pods = models.JSONField(
        default=list, blank=True, help_text="those pods: key, namespace/name, resources"
    )

    class Meta:
        ordering = ["partition", "node_id", "first_seen"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "node_id", "first_seen"], name="node_span_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "gone_in", "first_seen"], name="node_span_window"),
        ]

    def __str__(self) -> str:
        return self.node_id


class ApplicationSpan(Span):
    """An application (queue, state, used, pending, details) over the snapshots it was seen in."""

    app_id = models.CharField(max_length=255)
    queue = models.CharField(max_length=1000, blank=True)
    state = models.CharField(max_length=50, blank=True)
    used = models.JSONField(default=dict, blank=True)
    pending = models.JSONField(default=dict, blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["partition", "app_id", "first_seen"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "app_id", "first_seen"], name="app_span_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "gone_in", "first_seen"], name="app_span_window"),
        ]

    def __str__(self) -> str:
        return self.app_id


class AllocationSpan(Span):
    """One allocation over the snapshots it was seen in, unchanged."""

    key = models.CharField(max_length=500)
    app = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=1000)
    node = models.CharField(max_length=255)
    resources = models.JSONField(default=dict)
    priority = models.IntegerField(default=0)
    originator = models.BooleanField(default=False)
    allow_preemption = models.BooleanField(default=True)
    required_node = models.BooleanField(default=False)
    preempted = models.BooleanField(default=False)
    created = models.FloatField(default=0.0)
    placeholder = models.BooleanField(default=False, help_text="a gang-scheduling placeholder")
    placeholder_used = models.BooleanField(
        default=False, help_text="a real allocation that replaced a placeholder"
    )
    task_group = models.CharField(max_length=255, blank=True)
    pod = models.CharField(
        max_length=600,
        blank=True,
        help_text="namespace/name of the allocation's pod (its tags), empty when unknown",
    )

    class Meta:
        ordering = ["partition", "key", "first_seen"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "key", "first_seen"], name="allocation_span_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "gone_in", "first_seen"], name="alloc_span_window"),
            # one queue's allocations (``queue = path`` or ``queue LIKE 'path.%'``): the
            # queue page and the API's ?queue= read a few rows of a big partition; without
            # it, a scan of every span of the partition.
            # varchar_pattern_ops (PostgreSQL; ignored elsewhere) lets LIKE 'prefix%'
            # use it whatever the database's collation
            models.Index(
                fields=["partition", "queue"],
                name="alloc_span_queue",
                opclasses=["int8_ops", "varchar_pattern_ops"],
            ),
        ]

    def __str__(self) -> str:
        return self.key
