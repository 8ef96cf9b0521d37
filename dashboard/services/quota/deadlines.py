"""Every quota preemption deadline of a partition, by the partition's timer rule set.

A partition predicts its cluster's timers with rule set ``scheduler``
(yunikorn-core's rules, engine.md 5.1, the default) or ``seed`` (engine.md 5):
``Partition.timer_rules``.  Whatever sets a deadline — a change learned from
the cluster, a dashboard change once applied, a usage rise, a completion, a
scheduler restart — asks :func:`step` (or :func:`armed` for a timer whose start
is known), which calls :func:`engine.timers.timer_step` with the partition's
rule set; the engine's reason is stored on the change (``deadline_reason``) and
rendered by :func:`describe`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.db import transaction

from dashboard import models
from dashboard.display import deadline_reason_words, format_datetime
from dashboard.plumbing.clock import epoch, from_epoch
from dashboard.plumbing.errors import ServiceError
from dashboard.services.quota.queue_settings import timer_usage
from engine import timers
from engine.errors import ScenarioError


def rules_of(partition: models.Partition) -> timers.RuleSet:
    """The partition's timer rule set (``scheduler`` unless set to ``seed``)."""
    value = partition.timer_rules
    return value if value in timers.RULE_SETS else timers.DEFAULT_RULES


def rules_named(partition: str, cluster: str | None) -> timers.RuleSet:
    """The rule set of the partition an import is about to store into (by name, in
    *cluster* when given): the default when it is new or the name is ambiguous."""
    rows = models.Partition.objects.filter(name=partition)
    if cluster:
        rows = rows.filter(cluster__name=cluster)
    found = list(rows[:2])
    return rules_of(found[0]) if len(found) == 1 else timers.DEFAULT_RULES


def stored_reason(change: models.QuotaChange) -> timers.DeadlineReason | None:
    """The engine's reason stored on *change* (None when none, or from another version)."""
    data = change.deadline_reason
    if not isinstance(data, Mapping) or not data:
        return None
    try:
        return timers.DeadlineReason.from_dict(data)
    except ScenarioError:
        return None


def state_of(change: models.QuotaChange | None) -> timers.TimerState:
    """The engine timer state an active change row stands for, with its reason."""
    if change is None:
        return timers.TimerState.idle()
    if change.state == models.QuotaChange.State.RUNNING:
        started = change.started_at or change.changed_at
        return timers.TimerState.running(epoch(started), change.new_max)
    if change.state == models.QuotaChange.State.WAITING and change.deadline is not None:
        reason = stored_reason(change) or timers.DeadlineReason("started", epoch(change.changed_at))
        return timers.TimerState.waiting(epoch(change.deadline), reason)
    return timers.TimerState.idle()


def step(
    partition: models.Partition | timers.RuleSet,
    state: timers.TimerState,
    event: timers.TimerEvent,
    at: datetime,
) -> timers.TimerDecision:
    """One timer event at *at* under the partition's rule set (the one entry point)."""
    rules = partition if isinstance(partition, str) else rules_of(partition)
    return timers.timer_step(state, event, epoch(at), rules=rules)


def deadline_of(decision: timers.TimerDecision) -> datetime | None:
    """The waiting deadline of *decision* as a datetime (None when not waiting)."""
    if decision.state.is_waiting and decision.state.deadline is not None:
        return from_epoch(decision.state.deadline)
    return None


def reason_of(decision: timers.TimerDecision) -> dict[str, object]:
    """The reason to store with the change (empty when not waiting)."""
    reason = decision.reason
    return {} if reason is None else reason.to_dict()


def armed(start: datetime, delay: float, rule: timers.DeadlineRule = "started") -> datetime:
    """The deadline of a timer that started at *start* (a change re-timed to the cluster's
    clock); the same under both rule sets."""
    state = timers.arm(epoch(start), delay, rule)
    assert state.deadline is not None  # arm() always waits
    return from_epoch(state.deadline)


def retime_reason(change: models.QuotaChange, start: datetime) -> None:
    """Move a waiting change's timer to *start* when its deadline came from its own start
    (``started``, ``usage_rose``, ``reset``); a deadline kept, shifted or re-armed by
    another event stays as that event set it."""
    reason = stored_reason(change)
    if reason is not None and reason.rule not in ("started", "usage_rose", "reset"):
        return
    rule: timers.DeadlineRule = reason.rule if reason is not None else "started"
    change.deadline = armed(start, change.delay, rule)
    change.deadline_reason = timers.DeadlineReason(rule, epoch(start)).to_dict()


def describe(change: models.QuotaChange) -> str:
    """Which rule set the change's deadline, in words for a page ("" when unknown)."""
    if change.deadline is None:
        return ""
    return deadline_reason_words(change.deadline_reason, change.partition.timer_rules)


def _above(limit: Mapping[str, int] | None) -> dict[str, int]:
    return {t: q + 1 for t, q in (limit or {}).items()}


def _replayed(
    rules: timers.RuleSet,
    chain: list[models.QuotaChange],
    restarts: list[models.SchedulerStart],
) -> timers.TimerDecision | None:
    """The last decision of the queue's changes *chain* (oldest first) and the scheduler
    *restarts* among them, replayed in time order under *rules*."""
    steps: list[tuple[datetime, int, models.QuotaChange | models.SchedulerStart]] = [
        (c.changed_at, 0, c) for c in chain
    ] + [(r.started_at, 1, r) for r in restarts]
    state = timers.TimerState.idle()
    decision: timers.TimerDecision | None = None
    last = chain[-1]
    for at, _, item in sorted(steps, key=lambda s: (s[0], s[1])):
        if isinstance(item, models.SchedulerStart):
            usage = timer_usage(last.snapshot, last.queue_path, rules) if last.snapshot else None
            facts = timers.QueueFacts(
                max=last.new_max,
                usage=usage if usage is not None else _above(last.new_max),
                delay=last.delay,
                enabled=last.partition.quota_preemption_enabled,
            )
            decision = timers.rearm_after_restart(state, epoch(at), facts, rules=rules)
            state = decision.state
            continue
        change = item
        reason = stored_reason(change)
        if change.cause != models.QuotaChange.Cause.CHANGE:
            # a usage rise or a restart starts the same timer under both rule sets
            if change.deadline is None:
                continue
            rule = reason.rule if reason is not None else "usage_rose"
            state = timers.arm(epoch(change.changed_at), change.delay, rule)
            decision = timers.TimerDecision(state, "start_wait", change.reason)
            continue
        usage = timer_usage(change.snapshot, change.queue_path, rules) if change.snapshot else None
        event = timers.ConfigChanged(
            old_max=change.old_max,
            old_delay=change.old_delay if change.old_delay is not None else change.delay,
            max=change.new_max,
            usage=usage if usage is not None else _above(change.new_max),
            delay=change.delay,
            enabled=change.partition.quota_preemption_enabled,
        )
        decision = step(rules, state, event, change.changed_at)
        state = decision.state
    return decision


@transaction.atomic
def set_timer_rules(
    partition: models.Partition, rules: str, *, now: datetime
) -> list[models.QuotaChange]:
    """Switch the partition's timer rule set; every waiting change's deadline is derived
    again from the queue's changes since its timer started, under the new rules.

    Returns the waiting changes whose deadline moved or ended.

    Raises:
        ServiceError: *rules* is not ``scheduler`` or ``seed``.
    """
    if rules not in timers.RULE_SETS:
        raise ServiceError("timer_rules", f"unknown timer rule set {rules!r}: scheduler or seed")
    models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
    partition.timer_rules = rules
    partition.save(update_fields=["timer_rules"])
    moved: list[models.QuotaChange] = []
    waiting = models.QuotaChange.objects.filter(
        partition=partition, state=models.QuotaChange.State.WAITING
    )
    for change in waiting.select_related("partition", "snapshot"):
        chain = [change]
        while True:  # the changes this one superseded, while the timer waited
            before = (
                models.QuotaChange.objects.filter(
                    superseded_by=chain[0], state=models.QuotaChange.State.RESET
                )
                .select_related("partition", "snapshot")
                .first()
            )
            if before is None:
                break
            chain.insert(0, before)
        restarts = list(
            models.SchedulerStart.objects.filter(
                partition=partition,
                is_restart=True,
                started_at__gte=chain[0].changed_at,
                started_at__lte=now,
            )
        )
        decision = _replayed(rules, chain, restarts)
        if decision is None:
            continue
        deadline = deadline_of(decision)
        if deadline is None:
            change.state = models.QuotaChange.State.DONE
            change.finished_at = now
            change.deadline = None
            change.reason = f"no timer under rule set {rules}: {decision.note}"
        elif deadline != change.deadline or reason_of(decision) != change.deadline_reason:
            change.deadline = deadline
            change.reason = (
                f"rule set {rules}: quota preemption fires at {format_datetime(deadline)}"
            )
        else:
            continue
        change.deadline_reason = reason_of(decision)
        change.save(
            update_fields=[
                "state",
                "finished_at",
                "deadline",
                "deadline_reason",
                "reason",
                "updated_at",
            ]
        )
        moved.append(change)
    return moved
