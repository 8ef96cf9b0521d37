"""The dashboard's stored state: imports, snapshots, quota changes, runs, alerts.

Resources are JSON objects ``{type: int}`` exactly as in the scenario format
(``null`` = not set, which is not the same as ``{}`` for max: see the seeds).
Database constraints guard what must hold under races: one active quota change
per queue, one running quota preemption per queue, unique keys per snapshot,
unique idempotency keys.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

#: The cluster made for data that names none, while no cluster exists yet.
DEFAULT_CLUSTER = "default"


class AmbiguousCluster(Exception):
    """Several clusters exist and none was named."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"there are {len(names)} clusters ({', '.join(names)}): name the cluster")
        self.names = names


class ClusterManager(models.Manager["Cluster"]):
    def only_one(self) -> Cluster:
        """The only cluster, made as ``default`` while there is none.

        Raises:
            AmbiguousCluster: several clusters exist.
        """
        names = list(self.order_by("name").values_list("name", flat=True)[:21])
        if len(names) > 1:
            raise AmbiguousCluster(names)
        if names:
            return self.get(name=names[0])
        cluster, _ = self.get_or_create(name=DEFAULT_CLUSTER)
        return cluster


class Cluster(models.Model):
    """A YuniKorn scheduler's cluster: its partitions, and through them everything stored.

    ``name`` is what the dashboard calls it (the scheduler's ``clusterId`` or a name
    the administrator gives); ``cluster_id`` is the ``clusterId`` its REST answers
    carry, learnt from the first snapshot that names one.
    """

    name = models.CharField(max_length=200, unique=True)
    cluster_id = models.CharField(
        max_length=200, blank=True, default="", help_text="YuniKorn's clusterId, when known"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ClusterManager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Partition(models.Model):
    """A scheduler partition (YuniKorn ``partitions[].name``) of one cluster."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="partitions")
    name = models.CharField(max_length=200)
    quota_preemption_enabled = models.BooleanField(default=False)
    miss = models.FloatField(default=0.0)
    timer_rules = models.CharField(
        max_length=10,
        choices=[
            ("scheduler", "scheduler: yunikorn-core's timer rules (engine.md 5.1)"),
            ("seed", "seed: the design seed's timer rules (engine.md 5)"),
        ],
        default="scheduler",
        help_text="the rules every quota preemption deadline of the partition follows",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="partition_name_per_cluster"),
        ]

    def __str__(self) -> str:
        return self.name


class ConfigVersion(models.Model):
    """One import of a queue config for one partition; every import is kept."""

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="configs")
    number = models.PositiveIntegerField()
    filename = models.CharField(max_length=255, blank=True)
    text = models.TextField()
    checksum = models.CharField(max_length=64)
    quota_preemption_enabled = models.BooleanField(default=False)
    warnings = models.JSONField(default=list, blank=True)
    parsed = models.JSONField(default=dict, blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    imported_at = models.DateTimeField()
    planned = models.BooleanField(
        default=False,
        help_text="Kept from a plan (a proposed config): never the config in force.",
    )
    applied_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="planned: when a live source first read the scheduler running it "
        "(its /ws/v1/config checksum equal to this version's)",
    )

    class Meta:
        ordering = ["partition", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "number"], name="config_number_unique"),
        ]
        indexes = [models.Index(fields=["partition", "-imported_at"])]

    def __str__(self) -> str:
        planned = " (planned)" if self.planned else ""
        return f"{self.partition.name} config v{self.number}{planned}"


class ConfigQueue(models.Model):
    """A queue as configured in one config version."""

    version = models.ForeignKey(ConfigVersion, on_delete=models.CASCADE, related_name="queues")
    path = models.CharField(max_length=1000)
    name = models.CharField(max_length=255)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    depth = models.PositiveIntegerField(default=0)
    guaranteed = models.JSONField(null=True, blank=True)
    max = models.JSONField(null=True, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    quota_preemption_delay = models.FloatField(default=0.0)
    is_leaf = models.BooleanField(default=True)
    is_parent_flag = models.BooleanField(default=False)

    class Meta:
        ordering = ["version", "path"]
        constraints = [
            models.UniqueConstraint(fields=["version", "path"], name="config_queue_path_unique"),
        ]

    def __str__(self) -> str:
        return self.path


class ClusterSnapshot(models.Model):
    """A cluster state at one moment; ``scenario`` is kept whole for the engine."""

    class Source(models.TextChoices):
        SCENARIO = "scenario", "Scenario JSON"
        REST = "rest", "YuniKorn REST files"
        STATE_DUMP = "state_dump", "YuniKorn full state dump"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="snapshots")
    source_kind = models.CharField(max_length=20, choices=Source.choices)
    source_detail = models.CharField(max_length=500, blank=True)
    captured_at = models.DateTimeField()
    imported_at = models.DateTimeField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    scenario = models.JSONField()
    warnings = models.JSONField(default=list, blank=True)
    checksum = models.CharField(max_length=64, blank=True)
    scheduler_timers = models.JSONField(
        default=dict,
        blank=True,
        help_text="queue -> the scheduler's running quota timer as the import read it "
        "(quotaPreemptionStartTime, else a QUEUE_MAX event plus the delay, else unknown)",
    )

    class Meta:
        ordering = ["-captured_at", "-id"]
        indexes = [models.Index(fields=["partition", "-captured_at"])]

    def __str__(self) -> str:
        return f"snapshot {self.pk} of {self.partition.name} at {self.captured_at:%Y-%m-%d %H:%M}"


class SnapshotQueue(models.Model):
    """One queue of a snapshot, with YuniKorn's own figures beside the engine's.

    ``allocated`` is the queue's ``allocatedResource`` as the scheduler reports it
    (allocations being preempted still count), ``preempting`` the part being
    preempted and ``usage`` what remains (allocated - preempting, the engine's
    usage; types held only by preempted allocations are absent from it).
    """

    class Status(models.TextChoices):
        ACTIVE = "Active", "Active"
        DRAINING = "Draining", "Draining"
        STOPPED = "Stopped", "Stopped"

    snapshot = models.ForeignKey(ClusterSnapshot, on_delete=models.CASCADE, related_name="queues")
    path = models.CharField(max_length=1000)
    name = models.CharField(max_length=255)
    parent_path = models.CharField(max_length=1000, blank=True)
    depth = models.PositiveIntegerField(default=0)
    is_leaf = models.BooleanField(default=True)
    guaranteed = models.JSONField(null=True, blank=True)
    max = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    preempting = models.JSONField(default=dict, blank=True)
    pending = models.JSONField(default=dict, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    quota_preemption_delay = models.FloatField(null=True, blank=True)
    allocated = models.JSONField(
        default=dict, blank=True, help_text="allocatedResource as reported (preempting included)"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    dynamic = models.BooleanField(default=False, help_text="made from a parent's child template")
    max_applications = models.PositiveIntegerField(
        null=True, blank=True, help_text="maxapplications (maxRunningApps); empty when unlimited"
    )
    running_apps = models.PositiveIntegerField(
        null=True, blank=True, help_text="runningApps as reported; empty when not reported"
    )

    class Meta:
        ordering = ["snapshot", "path"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "path"], name="snapshot_queue_unique"),
        ]
        # one queue over time: the unique (snapshot, path) index leads with the snapshot
        indexes = [models.Index(fields=["path", "snapshot"], name="snapshot_queue_path")]

    def __str__(self) -> str:
        return self.path

    @property
    def remaining(self) -> dict[str, int]:
        """allocated - preempting over every type of allocated (0 where all is preempting)."""
        pre = self.preempting or {}
        return {t: q - pre.get(t, 0) for t, q in (self.allocated or {}).items()}


class SnapshotPreemptable(models.Model):
    """The engine's ``preemptable(Q)`` of every queue of a snapshot, computed at import.

    In its own table (one row per snapshot), so that reading snapshots never reads it;
    the tree and queue pages read it instead of building the engine state.  A snapshot
    stored before this table existed has no row (its values are computed on demand).
    """

    snapshot = models.OneToOneField(
        ClusterSnapshot,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preemptable_values",
    )
    #: queue path -> resource (``{}``: within its guarantee) or null (no allocations)
    values = models.JSONField()

    def __str__(self) -> str:
        return f"preemptable of snapshot {self.snapshot_id}"


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


class PendingAsk(models.Model):
    snapshot = models.ForeignKey(ClusterSnapshot, on_delete=models.CASCADE, related_name="asks")
    key = models.CharField(max_length=500)
    app = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=1000)
    resources = models.JSONField(default=dict)
    priority = models.IntegerField(default=0)
    allow_preempt_other = models.BooleanField(default=True)
    created = models.FloatField(default=0.0)
    # the scheduler's own word on why the ask waits (allocationLog, newest first)
    scheduler_log = models.JSONField(default=list, blank=True)
    scheduling_attempted = models.BooleanField(default=False)
    triggered_scale_up = models.BooleanField(default=False)

    class Meta:
        ordering = ["snapshot", "key"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "key"], name="snapshot_ask_key_unique"),
        ]

    def __str__(self) -> str:
        return self.key


class PreemptionRun(models.Model):
    """One engine evaluation: its request, answer, victims, outcome and timings."""

    class Kind(models.TextChoices):
        WHATIF_PREEMPT = "whatif_preempt", "What-if preemption for one ask"
        WHATIF_QUOTA = "whatif_quota", "What-if quota decrease"
        ROUND = "round", "Preemption round"
        QUOTA_ENFORCEMENT = "quota_enforcement", "Predicted quota preemption"
        QUOTA = "quota", "Quota preemption by the scheduler"
        PREEMPT = "preempt", "Preemption by the scheduler"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        TIMER = "timer", "Dashboard timer"
        API = "api", "API"
        OBSERVED = "observed", "Observed in the cluster"

    class Nature(models.TextChoices):
        """What a run is, in words: derived from its kind and trigger."""

        WHAT_IF = "what_if", "what-if"
        PREDICTED = "predicted", "predicted"
        OBSERVED = "observed", "observed"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="runs")
    snapshot = models.ForeignKey(
        ClusterSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.API)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    queue = models.CharField(max_length=1000, blank=True, help_text="ask queue or changed queue")
    request = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    outcome = models.CharField(max_length=30, blank=True)
    claimed = models.JSONField(null=True, blank=True)
    target = models.JSONField(null=True, blank=True)
    alerts = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    attempts = models.PositiveIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    queued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    engine_ms = models.FloatField(null=True, blank=True)
    predicted = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="observed_runs",
        help_text="observed runs: the dashboard's own run that predicted this enforcement",
    )

    class Meta:
        ordering = ["-queued_at", "-id"]
        constraints = [
            # At most one quota preemption runs per queue, even under races.
            models.UniqueConstraint(
                fields=["partition", "queue"],
                condition=Q(kind="quota_enforcement", status="running"),
                name="one_running_quota_preemption_per_queue",
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "-queued_at"]),
            models.Index(fields=["queue", "-queued_at"]),
            models.Index(fields=["kind", "status"]),
            models.Index(fields=["outcome"]),
            models.Index(fields=["trigger"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} {self.kind} {self.status}"

    @property
    def nature(self) -> str:
        """what-if (asked by someone), predicted (the dashboard's timers) or observed
        (the scheduler's own preemption, read from its events)."""
        return nature_of(self.kind, self.trigger)

    def get_nature_display(self) -> str:
        return str(self.Nature(self.nature).label)


def nature_of(kind: str, trigger: str) -> str:
    """The :class:`PreemptionRun.Nature` of a run of *kind* started by *trigger*."""
    if trigger == PreemptionRun.Trigger.OBSERVED:
        return PreemptionRun.Nature.OBSERVED
    if trigger == PreemptionRun.Trigger.TIMER or kind == PreemptionRun.Kind.QUOTA_ENFORCEMENT:
        return PreemptionRun.Nature.PREDICTED
    return PreemptionRun.Nature.WHAT_IF


class RunVictim(models.Model):
    run = models.ForeignKey(PreemptionRun, on_delete=models.CASCADE, related_name="victims")
    position = models.PositiveIntegerField()
    allocation_key = models.CharField(max_length=500)
    ask = models.CharField(max_length=500, blank=True, help_text="round: the ask it was taken for")
    app = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=1000, blank=True)
    leaf = models.CharField(max_length=1000, blank=True)
    node = models.CharField(max_length=255, blank=True)
    resources = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "allocation_key"], name="run_victim_unique"),
        ]

    def __str__(self) -> str:
        return self.allocation_key


class QuotaChange(models.Model):
    """A scheduled change of one queue's max and/or quota preemption delay.

    States: ``waiting`` (timer running until ``deadline``), ``running`` (the sweep
    claimed it and runs the plan), ``done`` (applied; ``run`` holds the plan when it
    fired, ``reason`` says why no timer when none was needed), ``reset`` (a later
    change to the same queue restarted the timer), ``cancelled_by_increase`` (an
    increase arrived before the deadline), ``cancelled`` (withdrawn by an admin),
    ``skipped`` (arrived while a quota preemption ran for the queue), ``failed``.
    ``pending`` is the state of a row being decided inside its transaction.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        WAITING = "waiting", "Waiting"
        RESET = "reset", "Reset by a later change"
        CANCELLED_BY_INCREASE = "cancelled_by_increase", "Cancelled by an increase"
        CANCELLED = "cancelled", "Cancelled"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        SKIPPED = "skipped", "Skipped (preemption running)"
        FAILED = "failed", "Failed"

    ACTIVE_STATES = ("waiting", "running")

    class ClockSource(models.TextChoices):
        """Where the timer's start (``changed_at``) comes from."""

        DASHBOARD = "dashboard", "the dashboard (planned here: saved in a page or the API)"
        EVENT = "event", "the scheduler's QUEUE_MAX event"
        START_TIME = "quotaPreemptionStartTime", "the scheduler (quotaPreemptionStartTime)"
        CONFIG_IMPORT = (
            "config_import",
            "unknown: the scheduler's change time is not known; counted from the config import",
        )
        CAPTURE = (
            "capture",
            "unknown: counted from the snapshot's capture time (the latest it can have started)",
        )
        IMPORT = (
            "import",
            "unknown: counted from the snapshot's import (recorded before the scheduler's "
            "clock was kept)",
        )

    class Cause(models.TextChoices):
        CHANGE = "change", "Max or delay changed"
        USAGE_ROSE = "usage_rose", "Usage rose above the max"
        RECHECK = "recheck", "Re-check after a skipped change"
        RESTART = "restart", "Re-armed at a scheduler restart"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="changes")
    cause = models.CharField(
        max_length=20,
        choices=Cause.choices,
        default=Cause.CHANGE,
        help_text="what started it: a change of the max/delay (API, page or config import), "
        "a snapshot whose usage rose above the max in force, or a re-check",
    )
    queue_path = models.CharField(max_length=1000)
    depth = models.PositiveIntegerField(default=0)
    old_max = models.JSONField(null=True, blank=True)
    new_max = models.JSONField(null=True, blank=True)
    old_delay = models.FloatField(null=True, blank=True)
    new_delay = models.FloatField(null=True, blank=True)
    delay = models.FloatField(default=0.0, help_text="effective delay in seconds")
    state = models.CharField(max_length=30, choices=State.choices, default=State.PENDING)
    reason = models.TextField(blank=True)
    changed_at = models.DateTimeField(help_text="the timer's start (see clock_source)")
    deadline_reason = models.JSONField(
        default=dict, blank=True, help_text="the engine's reason for the deadline (rule, at, since)"
    )
    clock_source = models.CharField(
        max_length=30,
        choices=ClockSource.choices,
        default=ClockSource.DASHBOARD,
        help_text="where changed_at comes from: the dashboard's save time (a planned change), "
        "the scheduler's QUEUE_MAX event or quotaPreemptionStartTime, or unknown",
    )
    clock_detail = models.CharField(
        max_length=255, blank=True, help_text="e.g. the QUEUE_MAX event id"
    )
    learned = models.BooleanField(
        default=False,
        help_text="learned from a config imported from the cluster (not made in the dashboard)",
    )
    applied_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when the cluster applied it (None: planned in the dashboard, not yet seen "
        "in an imported or polled config)",
    )
    deadline = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    config_version = models.ForeignKey(
        ConfigVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    snapshot = models.ForeignKey(
        ClusterSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    run = models.ForeignKey(
        PreemptionRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )

    class Meta:
        ordering = ["-changed_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(state__in=["waiting", "running"]),
                name="one_active_change_per_queue",
            ),
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(state="running"),
                name="one_running_change_per_queue",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "deadline"]),
            models.Index(fields=["partition", "queue_path", "-changed_at"]),
        ]

    def __str__(self) -> str:
        return f"change {self.pk} {self.queue_path} {self.state}"

    @property
    def is_planned(self) -> bool:
        """Made in the dashboard and not yet seen applied in the cluster's config."""
        return self.applied_at is None


class ObservedMaxChange(models.Model):
    """A QUEUE_MAX event: the scheduler changed a queue's max at ``time`` (its own clock)."""

    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="observed_max_changes"
    )
    instance_uuid = models.CharField(max_length=100, blank=True)
    event_id = models.BigIntegerField()
    queue = models.CharField(max_length=1000)
    time = models.DateTimeField()
    new_max = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["time", "event_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "instance_uuid", "event_id"], name="one_max_change_per_event"
            )
        ]

    def __str__(self) -> str:
        return f"QUEUE_MAX {self.event_id} {self.queue}"


class Alert(models.Model):
    class Level(models.TextChoices):
        INFO = "info", "Info"
        WARNING = "warning", "Warning"
        ERROR = "error", "Error"

    class Kind(models.TextChoices):
        IMPORT_FAILED = "import_failed", "Import failed"
        IMPORT_WARNING = "import_warning", "Import warning"
        #: the dashboard's own timer for a change fired (predicted: nothing happened in the cluster)
        QUOTA = "quota", "Quota timer fired (predicted)"
        #: the scheduler's quota preemption, read from its events, settled a waiting change
        QUOTA_OBSERVED = "quota_observed", "Quota preemption observed (scheduler)"
        TIMER = "timer", "Timer"
        CHANGE_SKIPPED = "change_skipped", "Change skipped"
        CANCELLED_BY_INCREASE = "cancelled_by_increase", "Cancelled by increase"
        RUN_FAILED = "run_failed", "Run failed"
        ENGINE = "engine", "Engine"
        SOURCE_FAILING = "source_failing", "Cluster source failing"
        SOURCE_RECOVERED = "source_recovered", "Cluster source recovered"
        SCHEDULER_UNHEALTHY = "scheduler_unhealthy", "Scheduler unhealthy (its healthcheck)"
        SCHEDULER_HEALTHY = "scheduler_healthy", "Scheduler healthy again"
        SCHEDULER_RESTART = "scheduler_restart", "Scheduler restarted"

    level = models.CharField(max_length=10, choices=Level.choices, default=Level.INFO)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    message = models.TextField()
    partition = models.ForeignKey(
        Partition, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    queue = models.CharField(max_length=1000, blank=True)
    run = models.ForeignKey(
        PreemptionRun, null=True, blank=True, on_delete=models.CASCADE, related_name="alert_rows"
    )
    change = models.ForeignKey(
        QuotaChange, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    created_at = models.DateTimeField()
    count = models.PositiveIntegerField(
        default=1, help_text="how many times this alert was raised while unread"
    )
    last_seen_at = models.DateTimeField(help_text="when it was raised last")
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="acknowledged_alerts",
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["acknowledged_at", "-created_at"]),
            models.Index(fields=["kind", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.level}: {self.message[:60]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.last_seen_at is None:  # a new alert: seen once, when it was raised
            self.last_seen_at = self.created_at
        super().save(*args, **kwargs)


class ImportJob(models.Model):
    """An upload imported by a worker (above ``DASHBOARD_IMPORT_ASYNC_BYTES``), with its
    progress: the request that accepted it never waits for the import."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=10, default="config")
    filename = models.CharField(max_length=255)
    cluster = models.CharField(
        max_length=200, blank=True, help_text="the cluster to import into (empty: the only one)"
    )
    partition = models.CharField(
        max_length=200, blank=True, help_text="import only this partition of the file"
    )
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    stage = models.CharField(max_length=200, blank=True, help_text="what the worker is doing")
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent done")
    error = models.TextField(blank=True)
    versions = models.JSONField(default=list, blank=True, help_text="config versions stored")
    changes = models.JSONField(default=list, blank=True, help_text="quota changes scheduled")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import job {self.pk} ({self.filename}): {self.status}"


class SchedulerStart(models.Model):
    """A scheduler instance a partition's cluster ran, first seen in a poll, stream or upload.

    Every instance after the first is a restart (``is_restart``): its timers were
    re-armed at ``started_at`` (``/ws/v1/clusters`` ``startTime`` when served, else
    the first event of the new ``InstanceUUID``).
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="starts")
    instance_uuid = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField()
    source = models.CharField(max_length=40, help_text="where started_at comes from")
    seen_at = models.DateTimeField()
    is_restart = models.BooleanField(default=False)
    rearmed = models.JSONField(default=list, blank=True, help_text="queues re-armed")

    class Meta:
        ordering = ["partition", "-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "instance_uuid", "started_at"], name="one_start_per_instance"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.partition} scheduler {self.instance_uuid or '?'} from {self.started_at}"


# Models of their own modules, in this app (migration 0019); imported last, as they
# refer to the models above.
from dashboard.alerting.models import AlertDelivery as AlertDelivery  # noqa: E402
from dashboard.alerting.models import AlertRoute as AlertRoute  # noqa: E402
from dashboard.metrics.models import SourcePollStats as SourcePollStats  # noqa: E402
