"""The scheduler's own preemptions, read from its events, stored as observed runs.

A quota preemption (the QUEUE_PREEMPTION summary and its victims) becomes a run
of kind ``quota``; an inter-queue preemption (the victims taken for one ask)
becomes a run of kind ``preempt``. Both have trigger ``observed``, the event
time as their time, no engine answer, and their victims as the scheduler named
them. They are keyed by the scheduler instance and event (a quota summary's
event id; an ask for a preemption), so reading the same events twice - an
uploaded REST folder and a live source's poll, or two polls - stores each once;
victims of an ask read in a later batch join its run.

Where the dashboard predicted the same enforcement before it happened (a quota
run of the same queue and max, timer or what-if, within :data:`MATCH_WINDOW`
before the observed time; a what-if for the same ask), the observed run links to it and
:func:`agreement` compares their victims.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from dashboard import models
from dashboard.importers.events import (
    EventsImport,
    ObservedPreemption,
    ObservedQuotaPreemption,
    Victim,
)
from dashboard.plumbing.clock import from_epoch, utcnow
from dashboard.services.quota.enforcement import retime_from_cluster
from dashboard.services.quota.scheduler_clock import store_max_changes

MATCH_WINDOW = timedelta(minutes=15)
"""How far from the observed time a prediction of the same queue may have been computed."""

Run = models.PreemptionRun

#: A quota change in these states is still open: an observed preemption at any later time
#: may answer its prediction.  Any other state closed it at its ``finished_at``.
OPEN_CHANGE_STATES = (
    models.QuotaChange.State.WAITING,
    models.QuotaChange.State.RUNNING,
    models.QuotaChange.State.FIRED,
)


def _key(partition: models.Partition, uuid: str, what: str) -> str:
    """``observed:<cluster>/<partition>:<instance>:<what>``: two partitions of one
    scheduler share its instance and event ids, so the partition is part of the key."""
    key = f"observed:{partition.cluster_id}/{partition.name}:{uuid or 'unknown'}:{what}"
    if len(key) <= 200:
        return key
    return "observed:" + hashlib.sha256(key.encode()).hexdigest()


def _legacy_key(uuid: str, what: str) -> str:
    """The key of a run stored before the partition was part of it."""
    key = f"observed:{uuid or 'unknown'}:{what}"
    if len(key) <= 200:
        return key
    return "observed:" + hashlib.sha256(key.encode()).hexdigest()


def quota_key(partition: models.Partition, uuid: str, q: ObservedQuotaPreemption) -> str:
    """The idempotency key of an observed quota preemption (cluster, partition, instance
    and summary event id)."""
    return _key(partition, uuid, f"quota:{q.summary_event_id}")


def preempt_key(partition: models.Partition, uuid: str, p: ObservedPreemption) -> str:
    """The idempotency key of an observed preemption (cluster, partition, instance and
    the ask it was for)."""
    return _key(partition, uuid, f"ask:{p.ask}")


def _sum(victims: Iterable[Victim]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in victims:
        for t, q in v.resources.items():
            out[t] = out.get(t, 0) + q
    return out


def _victim_row(run: Run, position: int, v: Victim, ask: str = "") -> models.RunVictim:
    return models.RunVictim(
        run=run,
        position=position,
        allocation_key=v.allocation_key[:500],
        ask=ask[:500],
        app=v.app[:255],
        queue=(v.queue or "")[:1000],
        leaf=(v.queue or "")[:1000],
        node=(v.node or "")[:255],
        resources=dict(v.resources),
    )


def _get_or_create(
    partition: models.Partition, key: str, defaults: Mapping[str, object], legacy: str
) -> tuple[Run, bool]:
    existing = Run.objects.filter(idempotency_key=key).first()
    if existing is None:
        # stored under the key without the partition: the same run when of this partition
        existing = Run.objects.filter(idempotency_key=legacy, partition=partition).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return Run.objects.create(idempotency_key=key, **defaults), True
    except IntegrityError:
        # a concurrent reader of the same events stored it first
        return Run.objects.get(idempotency_key=key), False


def _base(
    partition: models.Partition,
    snapshot: models.ClusterSnapshot | None,
    kind: str,
    queue: str,
    at: datetime,
) -> dict[str, object]:
    return {
        "partition": partition,
        "snapshot": snapshot,
        "kind": kind,
        "trigger": Run.Trigger.OBSERVED,
        "status": Run.Status.DONE,
        "queue": queue[:1000],
        "queued_at": at,
        "started_at": at,
        "finished_at": at,
    }


def _store_quota(
    partition: models.Partition,
    uuid: str,
    q: ObservedQuotaPreemption,
    snapshot: models.ClusterSnapshot | None,
) -> tuple[Run, bool]:
    at = from_epoch(q.time)
    claimed = q.claimed if q.claimed is not None else _sum(q.victims)
    run, created = _get_or_create(
        partition,
        quota_key(partition, uuid, q),
        {
            **_base(partition, snapshot, Run.Kind.QUOTA, q.queue, at),
            "request": {"queue": q.queue, "max": q.max, "event_id": q.summary_event_id},
            "result": {"instance_uuid": uuid, **q.to_dict()},
            "outcome": "preempted" if q.victims else "",
            "claimed": claimed,
            "target": q.preemptable,
        },
        legacy=_legacy_key(uuid, f"quota:{q.summary_event_id}"),
    )
    if created:
        models.RunVictim.objects.bulk_create(
            _victim_row(run, i, v) for i, v in enumerate(q.victims)
        )
        link_prediction(run)
    return run, created


def _store_preempt(
    partition: models.Partition,
    uuid: str,
    p: ObservedPreemption,
    snapshot: models.ClusterSnapshot | None,
) -> tuple[Run, bool]:
    at = from_epoch(p.time)
    run, created = _get_or_create(
        partition,
        preempt_key(partition, uuid, p),
        {
            **_base(partition, snapshot, Run.Kind.PREEMPT, p.queue, at),
            "request": {"ask": p.ask, "app": p.app, "queue": p.queue},
            "result": {"instance_uuid": uuid, **p.to_dict()},
            "outcome": "preempted",
            "claimed": _sum(p.victims),
        },
        legacy=_legacy_key(uuid, f"ask:{p.ask}"),
    )
    have = set(run.victims.values_list("allocation_key", flat=True))
    new = [v for v in p.victims if v.allocation_key not in have]
    if new:
        start = len(have)
        models.RunVictim.objects.bulk_create(
            _victim_row(run, start + i, v, p.ask) for i, v in enumerate(new)
        )
        if not created:
            result = dict(run.result or {})
            result["victims"] = [*result.get("victims", []), *(v.to_dict() for v in new)]
            run.result = result
            run.claimed = _sum_rows(run)
            run.save(update_fields=["result", "claimed"])
    if created:
        link_prediction(run)
    return run, created or bool(new)


def _sum_rows(run: Run) -> dict[str, int]:
    out: dict[str, int] = {}
    for res in run.victims.values_list("resources", flat=True):
        for t, q in (res or {}).items():
            out[t] = out.get(t, 0) + int(q)
    return out


@dataclass(frozen=True)
class ObservedStored:
    """What storing a batch did: the runs it created or added victims to, and all it saw."""

    stored: tuple[int, ...]
    seen: tuple[int, ...]


def record_observed(
    partition: models.Partition,
    batch: EventsImport,
    *,
    snapshot: models.ClusterSnapshot | None = None,
    now: datetime | None = None,
) -> ObservedStored:
    """Store the scheduler's preemptions of *batch* as observed runs of *partition*.

    Idempotent: a preemption already stored (same instance and event) is not stored
    again. Runs inside the caller's transaction when there is one. The batch's
    QUEUE_MAX events are kept too, and the partition's quota changes are timed by
    them (:func:`dashboard.services.quota.enforcement.retime_from_cluster`).
    """
    stored: list[int] = []
    seen: list[int] = []
    with transaction.atomic():
        store_max_changes(partition, batch)
        for q in batch.quota_preemptions:
            run, changed = _store_quota(partition, batch.instance_uuid, q, snapshot)
            seen.append(run.pk)
            if changed:
                stored.append(run.pk)
        for p in batch.preemptions:
            run, changed = _store_preempt(partition, batch.instance_uuid, p, snapshot)
            seen.append(run.pk)
            if changed:
                stored.append(run.pk)
        retime_from_cluster(partition, now=now or utcnow())
    return ObservedStored(tuple(stored), tuple(seen))


# ------------------------------------------------------------------ predictions


def prediction_for(run: Run) -> Run | None:
    """The dashboard's own run that predicted the observed *run*, if any.

    Only a prediction made before the scheduler acted counts (its time at or before
    the observed time, within :data:`MATCH_WINDOW`), and only one of the same change.
    A quota preemption: a finished quota run (predicted timer run or what-if) of the
    same partition and queue whose new max is the max the scheduler enforced, the
    nearest first. A preemption: a finished what-if for the same pending ask, or a
    round that chose victims for it, the nearest first. A quota prediction already
    linked to an earlier observed quota preemption is not linked to a later one, nor is
    a timer's prediction whose change closed before the observed time (its window ended:
    settled by a snapshot, replaced, enforced by another run).
    """
    at = run.queued_at
    base = Run.objects.filter(
        partition_id=run.partition_id,
        status=Run.Status.DONE,
        queued_at__gte=at - MATCH_WINDOW,
        queued_at__lte=at,
    ).exclude(trigger=Run.Trigger.OBSERVED)
    if run.kind == Run.Kind.QUOTA:
        enforced = (run.request or {}).get("max") or None
        near = [
            r
            for r in base.filter(
                kind__in=[Run.Kind.QUOTA_ENFORCEMENT, Run.Kind.WHATIF_QUOTA], queue=run.queue
            )
            if ((r.request or {}).get("new_max") or None) == enforced
        ]
    elif run.kind == Run.Kind.PREEMPT:
        ask = str((run.request or {}).get("ask") or "")
        if not ask:
            return None
        near = list(
            base.filter(
                Q(kind=Run.Kind.WHATIF_PREEMPT, request__ask_key=ask)
                | Q(kind=Run.Kind.ROUND, victims__ask=ask)
            ).distinct()
        )
    else:
        return None
    if run.kind == Run.Kind.QUOTA and near:
        # one prediction, one quota preemption: a prediction an earlier observed run of
        # the scheduler already answered is not that of a later, unrelated one
        taken = set(
            Run.objects.filter(
                Q(queued_at__lt=at) | Q(queued_at=at, pk__lt=run.pk),
                trigger=Run.Trigger.OBSERVED,
                kind=Run.Kind.QUOTA,
                predicted__in=[r.pk for r in near],
            )
            .exclude(pk=run.pk)
            .values_list("predicted_id", flat=True)
        )
        near = [r for r in near if r.pk not in taken]
        # a timer's prediction answers only what the scheduler did within its change's
        # window: a change closed (settled by a snapshot, replaced, enforced) before the
        # observed time has nothing left to answer for
        closed = set(
            models.QuotaChange.objects.filter(
                run__in=[r.pk for r in near],
                finished_at__lt=at,
            )
            .exclude(state__in=OPEN_CHANGE_STATES)
            .values_list("run_id", flat=True)
        )
        near = [r for r in near if r.pk not in closed]
    # timer runs before what-ifs, then the nearest in time
    candidates = sorted(
        near,
        key=lambda r: (r.trigger != Run.Trigger.TIMER, (at - r.queued_at).total_seconds(), r.pk),
    )
    return candidates[0] if candidates else None


def link_prediction(run: Run) -> Run | None:
    """Link an observed run to its prediction (see :func:`prediction_for`)."""
    found = prediction_for(run)
    if found is not None and run.predicted_id != found.pk:
        run.predicted = found
        run.save(update_fields=["predicted"])
    return found


def link_observed_to(run: Run) -> int:
    """After one of the dashboard's own runs finished: link the observed runs near it
    that had no prediction yet (read before it was computed, but happening at or after
    its time); the count linked."""
    if run.trigger == Run.Trigger.OBSERVED:
        return 0
    linked = 0
    for observed in Run.objects.filter(
        partition_id=run.partition_id,
        trigger=Run.Trigger.OBSERVED,
        predicted__isnull=True,
        queued_at__gte=run.queued_at,
        queued_at__lte=run.queued_at + MATCH_WINDOW,
    ):
        if link_prediction(observed) is not None:
            linked += 1
    return linked


def _victim_keys(run: Run, ask: str = "") -> set[str]:
    rows = run.victims.all()
    if ask and run.kind == Run.Kind.ROUND:
        rows = rows.filter(ask=ask)
    return set(rows.values_list("allocation_key", flat=True))


@dataclass(frozen=True)
class Comparison:
    """Predicted and observed victims of one observed run, side by side."""

    predicted: Run
    observed: Run
    both: tuple[str, ...]
    only_predicted: tuple[str, ...]
    only_observed: tuple[str, ...]

    @property
    def agreed(self) -> bool:
        return not self.only_predicted and not self.only_observed


def compare(observed: Run) -> Comparison | None:
    """The observed run's victims against its prediction's (None when not linked)."""
    predicted = observed.predicted
    if predicted is None:
        return None
    ask = str((observed.request or {}).get("ask") or "")
    mine = _victim_keys(observed)
    theirs = _victim_keys(predicted, ask)
    return Comparison(
        predicted=predicted,
        observed=observed,
        both=tuple(sorted(mine & theirs)),
        only_predicted=tuple(sorted(theirs - mine)),
        only_observed=tuple(sorted(mine - theirs)),
    )


@dataclass(frozen=True)
class Agreement:
    """How often the dashboard's predictions agreed with what the scheduler did."""

    observed: int
    predicted: int
    agreed: int


def agreement(runs: Iterable[Run]) -> Agreement:
    """Over *runs* (observed ones count): how many had a prediction, how many agreed."""
    observed = predicted = agreed = 0
    for run in runs:
        if run.trigger != Run.Trigger.OBSERVED:
            continue
        observed += 1
        cmp = compare(run)
        if cmp is None:
            continue
        predicted += 1
        if cmp.agreed:
            agreed += 1
    return Agreement(observed, predicted, agreed)
