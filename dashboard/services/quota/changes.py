"""Scheduling and cancelling changes of a queue's max or quota preemption delay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction

from dashboard import models
from dashboard.access import scoping
from dashboard.display import format_datetime
from dashboard.plumbing.bulk import update_rows
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.plumbing.users import stored_user
from dashboard.services.alerts import raise_alert
from dashboard.services.limits import checked_delay, validate_resource
from dashboard.services.quota.deadlines import rules_of
from dashboard.services.quota.queue_settings import (
    QueueSettings,
    check_max_above_guaranteed,
    queue_guaranteed,
    queue_settings,
    row_timer_usage,
    timer_usage,
)
from dashboard.services.quota.scheduler_clock import ClusterClock
from dashboard.services.quota.timers import (
    ChangeDecision,
    ClusterLowering,
    decide_change,
    over_words,
)
from dashboard.services.scope.latest import latest_config, latest_snapshot

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike


_UNSET: Any = object()


def schedule_quota_change(
    partition: models.Partition,
    queue_path: str,
    *,
    new_max: Mapping[str, int] | None = _UNSET,
    new_delay: float | None = _UNSET,
    user: UserLike = None,
    snapshot: models.ClusterSnapshot | None = None,
    config_version: models.ConfigVersion | None = None,
    now: datetime | None = None,
) -> models.QuotaChange:
    """Save a change of one queue's max and/or quota preemption delay and decide its timer.

    Args:
        partition: the queue's partition.
        queue_path: the queue (leaf or parent).
        new_max: the new max (``None`` removes the max); omitted = unchanged.
        new_delay: the new delay in seconds; omitted = unchanged.
        snapshot: the cluster state to judge usage by (default: the latest).
        config_version: the config import this change came from, if any.
        now: the change time (a new timer's start); default: the clock, read once the
            queue's partition is locked, so that concurrent changes get their times in
            the order they are saved.

    Raises:
        ServiceError: unknown queue, bad resource, or nothing changed.
    """
    # the queue ACLs of the config in force: only a queue the user administers changes
    scoping.require_administer(user, partition, [queue_path])
    if snapshot is not None and snapshot.partition_id != partition.pk:
        raise ServiceError(
            "snapshot",
            f"snapshot {snapshot.pk} is of another partition or cluster than the change "
            f"({partition.cluster.name}/{partition.name})",
        )
    if new_max is not _UNSET:
        new_max = validate_resource(new_max, "new_max")
    if new_delay is not _UNSET and new_delay is not None:
        # the one delay rule of the API, the forms and the config hand-back (NaN, inf,
        # beyond Go's time.Duration or below its 1ns resolution are refused)
        new_delay = checked_delay(new_delay, "new_delay")
    for attempt in range(3):
        try:
            return schedule_once(
                partition, queue_path, new_max, new_delay, user, snapshot, config_version, now
            )
        except IntegrityError:
            # a concurrent change for the same queue won the race for the active slot
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def schedule_once(
    partition: models.Partition,
    queue_path: str,
    new_max: Mapping[str, int] | None,
    new_delay: float | None,
    user: UserLike,
    snapshot: models.ClusterSnapshot | None,
    config_version: models.ConfigVersion | None,
    now: datetime | None,
    *,
    baseline: QueueSettings | None = None,
    clock: ClusterClock | None = None,
) -> models.QuotaChange:
    """Save one change (see :func:`schedule_quota_change`). A change the cluster made
    (a config import) gives its *baseline* (what was in force) and its *clock* (the
    scheduler's change time, ``now``): it is applied; without a clock it is planned."""
    with transaction.atomic():
        # Changes of one partition are saved one at a time (also when the queue has no
        # active change to lock yet), and the clock is read inside the lock: the change
        # saved last is the newest one, which queue_settings(planned=True) reports last.
        models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
        now = now or utcnow()
        active = (
            models.QuotaChange.objects.select_for_update()
            .filter(
                partition=partition,
                queue_path=queue_path,
                state__in=models.QuotaChange.ACTIVE_STATES,
            )
            .first()
        )
        # a change is decided against the administrator's plan as it stands (the changes
        # planned here count, in the order saved: a further decrease, a raise); what the
        # scheduler has in force is another matter (queue_settings without planned=True)
        current = baseline or queue_settings(partition, queue_path, planned=True)
        if not current.is_known:
            raise ServiceError(
                "queue_path", f"unknown queue {queue_path!r} in partition {partition.name}"
            )
        target_max = current.max if new_max is _UNSET else new_max
        target_delay = current.delay if new_delay is _UNSET or new_delay is None else new_delay
        if target_max == current.max and target_delay == current.delay:
            raise ServiceError(
                "new_max", "nothing changes: the max and the delay are as configured"
            )
        if baseline is None:  # a change learned from an imported config is what the cluster runs
            check_max_above_guaranteed(
                target_max,
                queue_guaranteed(partition, queue_path),
                target_delay,
                queue_path,
                # only the types the change sets: one left at its max in force is not
                # the administrator's, whatever the delay becomes
                kept=current.max,
            )
        snap = snapshot or latest_snapshot(partition, defer_state=True)
        decision = _decide(
            partition, queue_path, active, current, target_max, target_delay, snap, now
        )
        change = _new_change(
            partition,
            queue_path,
            current,
            target_max,
            None if new_delay is _UNSET else new_delay,
            target_delay,
            now,
            clock,
            user,
            config_version or latest_config(partition),
            snap,
        )
        change.save(force_insert=True)
        superseded = _supersede(active, decision, change, now)
        if superseded is not None:
            superseded.save(update_fields=_SUPERSEDED_FIELDS)
            _alert_superseded(partition, superseded, change, decision, now)
        _settle(change, decision, now)
        if clock is not None:
            usage = timer_usage(snap, queue_path, rules_of(partition)) if snap is not None else None
            _say_learned(change, current, usage)
        change.save(update_fields=_DECIDED_FIELDS)
        _alert_skipped(partition, change, decision, now)
        return change


@dataclass(frozen=True, slots=True)
class LearnedChange:
    """A change of one queue's max and delay that an imported config shows the cluster
    made: what was in force before (*baseline*) and the scheduler's *clock* of it."""

    queue_path: str
    new_max: Mapping[str, int] | None
    new_delay: float
    baseline: QueueSettings
    clock: ClusterClock


def save_learned_changes(
    partition: models.Partition,
    learned: Sequence[LearnedChange],
    *,
    user: UserLike,
    snapshot: models.ClusterSnapshot | None,
    config_version: models.ConfigVersion,
) -> list[models.QuotaChange]:
    """Save the changes a config import learned, in their order, as :func:`schedule_once`
    saves one (with its *baseline* and *clock*) - the same rows, the same decisions and
    alerts - in a fixed number of queries whatever their number (and one per alert):
    the queues' active changes and usage are read once, the new changes inserted
    together, the changes they supersede and their decisions written in one statement
    each. *snapshot* is the partition's latest (usage is read from it)."""
    if not learned:
        return []
    with transaction.atomic():
        # the partition's changes are saved one batch at a time (see schedule_once)
        models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
        paths = [c.queue_path for c in learned]
        active_of: dict[str, models.QuotaChange] = {}
        for row in (
            models.QuotaChange.objects.select_for_update()
            .filter(
                partition=partition,
                queue_path__in=paths,
                state__in=models.QuotaChange.ACTIVE_STATES,
            )
            .order_by("-changed_at", "-id")
        ):
            active_of.setdefault(row.queue_path, row)  # as .first() of the queue's
        rules = rules_of(partition)
        usage: dict[str, dict[str, int]] = {}
        if snapshot is not None:
            # (not through snapshot.queues: that would read each row's snapshot_id back)
            for queue in models.SnapshotQueue.objects.filter(
                snapshot=snapshot, path__in=paths
            ).only("path", "usage", "preempting", "allocated"):
                usage[queue.path] = row_timer_usage(queue, rules)
        decided: list[tuple[models.QuotaChange, ChangeDecision, models.QuotaChange | None]] = []
        for c in learned:
            current = c.baseline
            if c.new_max == current.max and c.new_delay == current.delay:
                raise ServiceError(
                    "new_max", "nothing changes: the max and the delay are as configured"
                )
            active = active_of.get(c.queue_path)
            now = c.clock.at
            decision = _decide_on(
                partition,
                c.queue_path,
                active,
                current,
                c.new_max,
                c.new_delay,
                usage.get(c.queue_path) if snapshot is not None else None,
                now,
            )
            change = _new_change(
                partition,
                c.queue_path,
                current,
                c.new_max,
                c.new_delay,
                c.new_delay,
                now,
                c.clock,
                user,
                config_version,
                snapshot,
            )
            decided.append((change, decision, active))
        # inserted in order: their ids are in the order one-by-one saves gave them
        models.QuotaChange.objects.bulk_create(
            [change for change, _, _ in decided], batch_size=1000
        )
        superseded: list[tuple[models.QuotaChange, models.QuotaChange, ChangeDecision]] = []
        for change, decision, active in decided:
            left = _supersede(active, decision, change, change.changed_at)
            if left is not None:
                superseded.append((left, change, decision))
        update_rows([active for active, _, _ in superseded], _SUPERSEDED_FIELDS)
        for (change, decision, _), c in zip(decided, learned, strict=True):
            _settle(change, decision, change.changed_at)
            _say_learned(change, c.baseline, usage.get(c.queue_path))
        update_rows([change for change, _, _ in decided], _DECIDED_FIELDS)
        by_change = {change.pk: active for active, change, _ in superseded}
        for change, decision, _ in decided:
            active = by_change.get(change.pk)
            if active is not None:
                _alert_superseded(partition, active, change, decision, change.changed_at)
            _alert_skipped(partition, change, decision, change.changed_at)
        return [change for change, _, _ in decided]


_SUPERSEDED_FIELDS = ["state", "superseded_by", "finished_at", "reason", "updated_at"]
_DECIDED_FIELDS = ["state", "deadline", "deadline_reason", "reason", "finished_at", "updated_at"]


def _new_change(
    partition: models.Partition,
    queue_path: str,
    current: QueueSettings,
    target_max: Mapping[str, int] | None,
    new_delay: float | None,
    target_delay: float,
    now: datetime,
    clock: ClusterClock | None,
    user: UserLike,
    config_version: models.ConfigVersion | None,
    snap: models.ClusterSnapshot | None,
) -> models.QuotaChange:
    """A change row being decided (``pending``), not saved yet."""
    return models.QuotaChange(
        partition=partition,
        queue_path=queue_path,
        depth=queue_path.count("."),
        old_max=current.max,
        new_max=target_max,
        old_delay=current.delay,
        new_delay=new_delay,
        delay=target_delay,
        state=models.QuotaChange.State.PENDING,
        changed_at=now,
        clock_source=clock.source if clock is not None else "dashboard",
        clock_detail=clock.detail[:255] if clock is not None else "",
        applied_at=clock.at if clock is not None else None,
        learned=clock is not None,
        created_by=stored_user(user),
        config_version=config_version,
        snapshot=snap,
    )


def _supersede(
    active: models.QuotaChange | None,
    decision: ChangeDecision,
    change: models.QuotaChange,
    now: datetime,
) -> models.QuotaChange | None:
    """*active*, the queue's active change, as *change* leaves it by *decision* (not
    saved); None when it stays as it is."""
    if active is None or decision.previous is None:
        return None
    active.state = decision.previous
    active.superseded_by = change
    active.finished_at = now
    active.reason = (
        f"cancelled by the increase in change {change.pk}"
        if decision.previous == models.QuotaChange.State.CANCELLED_BY_INCREASE
        else f"superseded by change {change.pk} at {format_datetime(now)}"
    )
    return active


def _alert_superseded(
    partition: models.Partition,
    active: models.QuotaChange,
    change: models.QuotaChange,
    decision: ChangeDecision,
    now: datetime,
) -> None:
    if decision.previous == models.QuotaChange.State.CANCELLED_BY_INCREASE:
        raise_alert(
            models.Alert.Kind.CANCELLED_BY_INCREASE,
            f"{change.queue_path}: the pending quota decrease (change {active.pk}, due "
            f"{format_datetime(active.deadline, empty='-')}) was cancelled "
            f"by an increase of the max (change {change.pk}); no preemption",
            level=models.Alert.Level.INFO,
            partition=partition,
            queue=change.queue_path,
            change=active,
            now=now,
        )


def _settle(change: models.QuotaChange, decision: ChangeDecision, now: datetime) -> None:
    """*change* as *decision* leaves it (not saved)."""
    change.state = decision.state
    change.deadline = decision.deadline
    change.deadline_reason = decision.deadline_reason
    change.reason = decision.reason
    if decision.state != models.QuotaChange.State.WAITING:
        change.finished_at = now


def _say_learned(
    change: models.QuotaChange, before: QueueSettings, usage: Mapping[str, int] | None
) -> None:
    """A change learned from a config says first what the cluster did (not saved)."""
    learned = _learned_words(before, change.new_max, usage)
    if learned:
        change.reason = f"{learned}; {change.reason}"


def _alert_skipped(
    partition: models.Partition, change: models.QuotaChange, decision: ChangeDecision, now: datetime
) -> None:
    if decision.state == models.QuotaChange.State.SKIPPED:
        raise_alert(
            models.Alert.Kind.CHANGE_SKIPPED,
            f"{change.queue_path}: change {change.pk} arrived while a quota preemption runs "
            "for this queue; it was recorded and skipped",
            partition=partition,
            queue=change.queue_path,
            change=change,
            now=now,
        )


#: Where the previous max of a change learned from a config comes from, by
#: ``QueueSettings.source``.
_PREVIOUS_FROM = {
    "config": "the previous max is the config in force before",
    "change": "the previous max is the one a change the cluster applied before set",
    "observed": "the previous max is the scheduler's own (its QUEUE_MAX events)",
    "snapshot": "the previous max is the one the latest snapshot showed",
}


def _learned_words(
    before: QueueSettings,
    new_max: Mapping[str, int] | None,
    usage: Mapping[str, int] | None,
) -> str:
    """What the cluster did, for a change learned from its config: the types it lowered
    (from *before*, with where that previous max comes from, or that it is unknown) and
    the types its timer *usage* is over (None: not known) ("" when no type was lowered:
    a raise or a delay change)."""
    lowering = ClusterLowering(
        before.max,
        before.is_known,
        _PREVIOUS_FROM.get(before.source, "the previous max as the dashboard held it"),
    )
    if not lowering.lowered_types(new_max):
        return ""
    words = lowering.words(new_max)
    over = over_words(usage, new_max) if usage is not None else ""
    if usage is None:
        over = "usage not known (no snapshot)"
    return f"{words}; {over}" if over else f"{words}; usage within the new max"


def _decide(
    partition: models.Partition,
    queue_path: str,
    active: models.QuotaChange | None,
    current: QueueSettings,
    target_max: Mapping[str, int] | None,
    target_delay: float,
    snap: models.ClusterSnapshot | None,
    now: datetime,
) -> ChangeDecision:
    """The timer decision for a change of *queue_path* to *target_max* / *target_delay*
    from *current*, with the queue's *active* change, usage read from *snap*."""
    usage = timer_usage(snap, queue_path, rules_of(partition)) if snap is not None else None
    return _decide_on(partition, queue_path, active, current, target_max, target_delay, usage, now)


def _decide_on(
    partition: models.Partition,
    queue_path: str,
    active: models.QuotaChange | None,
    current: QueueSettings,
    target_max: Mapping[str, int] | None,
    target_delay: float,
    usage: Mapping[str, int] | None,
    now: datetime,
) -> ChangeDecision:
    """:func:`_decide` with the queue's timer *usage* given (None: no snapshot)."""
    return decide_change(
        active=active,
        quota_preemption_enabled=partition.quota_preemption_enabled,
        old_delay=current.delay,
        delay=target_delay,
        old_max=current.max,
        new_max=target_max,
        usage=usage,
        is_dynamic=current.is_dynamic,
        queue=queue_path,
        now=now,
        rules=rules_of(partition),
    )


def preview_quota_change(
    partition: models.Partition,
    queue_path: str,
    *,
    new_max: Mapping[str, int] | None,
    snapshot: models.ClusterSnapshot | None = None,
    now: datetime | None = None,
) -> ChangeDecision | None:
    """What saving a change of *queue_path*'s max to *new_max* now would do to its timer,
    under the partition's rule set, without saving anything: the decision
    :func:`schedule_quota_change` would make (a timer started, kept from the first
    decrease, none at all). ``None`` when the queue is unknown or the max is unchanged."""
    current = queue_settings(partition, queue_path, planned=True)
    if not current.is_known or new_max == current.max:
        return None
    active = models.QuotaChange.objects.filter(
        partition=partition, queue_path=queue_path, state__in=models.QuotaChange.ACTIVE_STATES
    ).first()
    snap = snapshot or latest_snapshot(partition, defer_state=True)
    return _decide(
        partition, queue_path, active, current, new_max, current.delay, snap, now or utcnow()
    )


def cancel_quota_change(
    change: models.QuotaChange, *, user: UserLike = None, now: datetime | None = None
) -> models.QuotaChange:
    """Withdraw a waiting change (its timer stops; the previous max stays in force).

    A change applied in the cluster keeps the scheduler's own timer running there: only
    the dashboard's prediction stops, and the reason says so.
    """
    scoping.require_administer(user, change.partition, [change.queue_path])
    now = now or utcnow()
    who = getattr(stored_user(user), "username", "an administrator")
    note = (
        ""
        if change.applied_at is None
        else " (applied in the cluster: only the dashboard's prediction stops; the "
        "scheduler's own timer keeps running)"
    )
    with transaction.atomic():
        n = models.QuotaChange.objects.filter(
            pk=change.pk, state=models.QuotaChange.State.WAITING
        ).update(
            state=models.QuotaChange.State.CANCELLED,
            finished_at=now,
            reason=f"cancelled by {who}{note}",
        )
        if not n:
            change.refresh_from_db()
            raise ServiceError(
                "state", f"only a waiting change can be cancelled; this one is {change.state}"
            )
    change.refresh_from_db()
    return change
