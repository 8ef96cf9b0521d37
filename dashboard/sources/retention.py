"""Snapshot retention: thin old polled snapshots by age, keep everything referenced.

Only snapshots stored by a cluster-source poll are thinned; uploaded snapshots are
the administrators' own and are never removed here.  Of the polled ones:

- every snapshot a preemption run or a quota change refers to is kept, and so is
  the newest snapshot of each source and of each partition (and a source's
  ``last_snapshot``);
- snapshots younger than ``keep_all`` are all kept;
- up to ``hourly_until`` old, the earliest snapshot of each clock hour is kept;
- older, the earliest snapshot of each day (UTC) is kept.

Keeping the *earliest* of each bucket makes thinning stable: the survivor of an
hour is also the earliest of its day, so a snapshot kept at one prune is never
the reason another is deleted later.  Allocations are stored once for the run of
snapshots they were seen in; the spans no remaining snapshot holds go with the
snapshots, and those a kept snapshot holds stay whole.  A protected snapshot that is the earliest
of its bucket is the bucket's survivor.  Buckets are per source.  The referenced
checks run again inside the deleting transaction, so a run created between the
plan and the delete keeps its snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from dashboard import models as dm
from dashboard.services import drop_unused_spans, utcnow
from dashboard.sources.models import ClusterSource, SourceSnapshot

DELETE_BATCH = 50


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    keep_all: timedelta = timedelta(days=1)
    hourly_until: timedelta = timedelta(days=7)

    @classmethod
    def from_settings(cls) -> RetentionPolicy:
        """``SOURCES_RETENTION_KEEP_ALL_HOURS`` (24) and ``SOURCES_RETENTION_HOURLY_DAYS`` (7)."""
        keep_all = float(getattr(settings, "SOURCES_RETENTION_KEEP_ALL_HOURS", 24.0))
        hourly = float(getattr(settings, "SOURCES_RETENTION_HOURLY_DAYS", 7.0))
        return cls(keep_all=timedelta(hours=keep_all), hourly_until=timedelta(days=hourly))

    def bucket(self, captured_at: datetime, now: datetime) -> tuple[str, datetime | date] | None:
        """The thinning bucket of a snapshot, or ``None`` when it is young enough to keep.

        >>> from datetime import UTC
        >>> now = datetime(2026, 9, 10, tzinfo=UTC)
        >>> RetentionPolicy().bucket(datetime(2026, 9, 9, 12, tzinfo=UTC), now) is None
        True
        >>> RetentionPolicy().bucket(datetime(2026, 9, 8, 12, 40, tzinfo=UTC), now)[0]
        'hour'
        >>> RetentionPolicy().bucket(datetime(2026, 9, 1, 12, 40, tzinfo=UTC), now)
        ('day', datetime.date(2026, 9, 1))
        """
        age = now - captured_at
        if age <= self.keep_all:
            return None
        if age <= self.hourly_until:
            return ("hour", captured_at.replace(minute=0, second=0, microsecond=0))
        return ("day", captured_at.date())


@dataclass
class PrunePlan:
    considered: int = 0
    delete: list[int] = field(default_factory=list)
    protected: set[int] = field(default_factory=set)
    deleted: int = 0
    spans_deleted: int = 0

    @property
    def kept(self) -> int:
        return self.considered - len(self.delete)


def _referenced() -> Q:
    """Snapshots something points at: runs, quota changes, a source's last snapshot."""
    return (
        Q(Exists(dm.PreemptionRun.objects.filter(snapshot=OuterRef("pk"))))
        | Q(Exists(dm.QuotaChange.objects.filter(snapshot=OuterRef("pk"))))
        | Q(Exists(ClusterSource.objects.filter(last_snapshot=OuterRef("pk"))))
    )


def protected_snapshot_ids() -> set[int]:
    """Referenced snapshots plus the newest one of each source and each partition."""
    ids = set(
        dm.ClusterSnapshot.objects.filter(source_link__isnull=False)
        .filter(_referenced())
        .values_list("pk", flat=True)
    )
    for source_id in SourceSnapshot.objects.values_list("source_id", flat=True).distinct():
        newest = (
            SourceSnapshot.objects.filter(source_id=source_id)
            .order_by("-snapshot__captured_at", "-snapshot_id")
            .values_list("snapshot_id", flat=True)
            .first()
        )
        if newest is not None:
            ids.add(newest)
    for partition_id in dm.Partition.objects.values_list("pk", flat=True):
        newest = (
            dm.ClusterSnapshot.objects.filter(partition_id=partition_id)
            .order_by("-captured_at", "-id")
            .values_list("pk", flat=True)
            .first()
        )
        if newest is not None:
            ids.add(newest)
    return ids


def plan_prune(now: datetime | None = None, policy: RetentionPolicy | None = None) -> PrunePlan:
    """Which polled snapshots thinning would delete now (nothing is written)."""
    now = now or utcnow()
    policy = policy or RetentionPolicy.from_settings()
    plan = PrunePlan(protected=protected_snapshot_ids())
    rows = SourceSnapshot.objects.order_by(
        "source_id", "snapshot__captured_at", "snapshot_id"
    ).values_list("source_id", "snapshot_id", "snapshot__captured_at")
    seen: set[tuple[int, str, datetime | date]] = set()
    for source_id, snapshot_id, captured_at in rows.iterator(chunk_size=2000):
        plan.considered += 1
        bucket = policy.bucket(captured_at, now)
        if bucket is None:
            continue
        key = (source_id, *bucket)
        if key not in seen:
            seen.add(key)  # the earliest of its bucket (a protected one counts too)
        elif snapshot_id not in plan.protected:
            plan.delete.append(snapshot_id)
    return plan


def prune_snapshots(
    now: datetime | None = None,
    *,
    dry_run: bool = False,
    policy: RetentionPolicy | None = None,
) -> PrunePlan:
    """Delete what :func:`plan_prune` selects (in small transactions), unless *dry_run*."""
    plan = plan_prune(now, policy)
    if dry_run:
        return plan
    for i in range(0, len(plan.delete), DELETE_BATCH):
        batch = plan.delete[i : i + DELETE_BATCH]
        with transaction.atomic():
            doomed = dm.ClusterSnapshot.objects.filter(
                pk__in=batch, source_link__isnull=False
            ).exclude(_referenced())
            ids = list(doomed.values_list("pk", flat=True))
            partitions = set(
                dm.ClusterSnapshot.objects.filter(pk__in=ids).values_list("partition_id", flat=True)
            )
            dm.ClusterSnapshot.objects.filter(pk__in=ids).delete()
            # allocations are shared between snapshots: drop those no snapshot holds now
            plan.spans_deleted += drop_unused_spans(partitions)
            plan.deleted += len(ids)
    return plan
