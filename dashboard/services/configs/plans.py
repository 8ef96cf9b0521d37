"""Config rollout plans: the proposed config against what is in force, and what to do with it.

- :func:`plan_proposed_config` reads the partition's config in force (its latest
  non-planned config version, then the quota changes saved since, and the timers
  they run) and its latest snapshot (less the victims quota enforcement already
  took), and returns :func:`dashboard.planning.plan_config`'s plan.  It stores
  nothing: not the config, not a change, not an alert.
- :func:`keep_planned_config` keeps the proposed config as a version marked
  ``planned``: listed with the others, never the config in force.
- :func:`schedule_planned_config` saves the plan's changes of max and delay as
  quota changes through :func:`dashboard.services.schedule_quota_change`, all or
  none.
- :func:`planned_config_handback` gives the proposed config back as queues.yaml,
  ConfigMap and ``kubectl patch`` command (the quota-change hand-back's forms).

The cluster (optional while one cluster has a partition so named) and the partition
select the config in force.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction

from dashboard import models
from dashboard.access import scoping
from dashboard.importers.config import ConfigImport, TooManyConfigQueues, parse_config
from dashboard.importers.config.specs import DEFAULT_PARTITION
from dashboard.importers.errors import ImportFailure
from dashboard.importers.export import configmap_of, kubectl_patch_command
from dashboard.planning import ConfigPlan, QueueInForce, plan_config
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.services.configs.versions import store_config_version
from dashboard.services.engine_state_cache import cluster_from_snapshot
from dashboard.services.limits import (
    check_upload_size,
    config_queue_limit,
    too_many_config_queues,
)
from dashboard.services.quota.changes import schedule_quota_change
from dashboard.services.quota.deadlines import rules_of, state_of
from dashboard.services.scope.cluster_choice import find_partition, partitions_named, scope_label
from dashboard.services.scope.latest import latest_config
from engine import model as em
from engine import timers

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike

__all__ = [
    "DEFAULT_PARTITION",
    "PlanHandback",
    "ScheduledPlan",
    "config_in_force",
    "keep_planned_config",
    "plan_proposed_config",
    "planned_config_handback",
    "schedule_planned_config",
]

_SKIPPED_STATES = (models.QuotaChange.State.CANCELLED, models.QuotaChange.State.PENDING)


def _epoch(dt: datetime) -> float:
    return dt.timestamp()


def _partition(name: str, cluster: str | None = None) -> models.Partition:
    row = find_partition(name, cluster)
    if row is None:
        known = ", ".join(scope_label(p) for p in partitions_named(None, cluster)) or "none yet"
        raise ServiceError(
            "partition",
            f"unknown partition {name!r} (known: {known}); the partition selects the config "
            "in force and the snapshot a plan is made against",
        )
    return row


def _timer_state(change: models.QuotaChange) -> timers.TimerState:
    """The engine timer state an active change row stands for (as the live timers read it)."""
    return state_of(change)


def config_in_force(
    partition: models.Partition, snapshot: models.ClusterSnapshot | None
) -> dict[str, QueueInForce]:
    """Every queue's max, guaranteed, delay and timer as in force now.

    The latest non-planned config version, then the quota changes the cluster made or
    was seen applying since (the last one of a queue wins), then their active timers
    (changes planned in the dashboard are not in force, nor their timers: the
    scheduler has none for them);
    queues only the snapshot knows are dynamic (or, without any config, the
    snapshot's tree is what is in force).
    """
    config = latest_config(partition)
    out: dict[str, QueueInForce] = {}
    if config is not None:
        for path, max_, guaranteed, seconds in config.queues.values_list(
            "path", "max", "guaranteed", "quota_preemption_delay"
        ):
            out[path] = QueueInForce(max_, guaranteed, float(seconds))
    if snapshot is not None:
        rows = {q.path: q for q in snapshot.queues.all()}
        for path, row in rows.items():
            if path in out:
                continue
            own: float | None = row.quota_preemption_delay
            parent = rows.get(row.parent_path) if row.parent_path else None
            while own is None and parent is not None:  # the nearest ancestor's, else 0
                own = parent.quota_preemption_delay
                parent = rows.get(parent.parent_path) if parent.parent_path else None
            out[path] = QueueInForce(
                row.max, row.guaranteed, float(own or 0.0), is_dynamic=config is not None
            )
    changes = models.QuotaChange.objects.filter(partition=partition).exclude(
        state__in=_SKIPPED_STATES
    )
    if config is not None:
        changes = changes.filter(changed_at__gte=config.imported_at)
    # the scheduler's: changes planned here and not yet seen applied are not in force
    changes = changes.filter(applied_at__isnull=False)
    for change in changes.order_by("changed_at", "id"):
        base = out.get(change.queue_path)
        if base is not None:
            out[change.queue_path] = QueueInForce(
                change.new_max, base.guaranteed, change.delay, base.is_dynamic
            )
    active = models.QuotaChange.objects.filter(
        partition=partition, state__in=models.QuotaChange.ACTIVE_STATES, applied_at__isnull=False
    )
    for change in active:
        base = out.get(change.queue_path)
        if base is not None:
            out[change.queue_path] = QueueInForce(
                base.max, base.guaranteed, base.delay, base.is_dynamic, _timer_state(change)
            )
    return out


def plan_proposed_config(
    data: bytes | str,
    *,
    partition: str = DEFAULT_PARTITION,
    cluster: str | None = None,
    filename: str = "queues.yaml",
    now: datetime | None = None,
    user: UserLike = None,
) -> ConfigPlan:
    """The plan of applying *data* now to *partition* (see the module docstring).

    A config the scheduler would refuse gives a plan whose ``refusals`` name the
    reason and line (the caller decides how to answer).  Stores nothing.

    Raises:
        ServiceError: unknown partition; UploadTooLarge; OverLimit (more queues than
            ``DASHBOARD_MAX_SNAPSHOT_QUEUES``).
        QueueAccessDenied: the plan changes, adds or removes a queue *user* does not
            administer (the queue ACLs of the config in force).
    """
    size = len(data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data)
    check_upload_size(filename, size)
    row = _partition(partition, cluster)
    # the stored scenario document is not needed (the rows are): on a big cluster it is
    # as large as all the allocation rows together
    snapshot = row.snapshots.order_by("-captured_at", "-id").defer("scenario", "warnings").first()
    engine_cluster = None
    if snapshot is not None:
        engine_cluster = cluster_from_snapshot(
            snapshot,
            partition=em.Partition(row.quota_preemption_enabled, row.miss),
        )
    when = now or utcnow()
    try:
        plan = plan_config(
            data,
            in_force=config_in_force(row, snapshot),
            cluster=engine_cluster,
            now=_epoch(when),
            partition=partition,
            filename=filename,
            miss=row.miss,
            in_force_enabled=row.quota_preemption_enabled,
            rules=rules_of(row),
            max_queues=config_queue_limit(),
        )
    except TooManyConfigQueues as exc:
        raise too_many_config_queues(exc) from exc
    # the queue ACLs: a plan touching a queue the user does not administer is refused
    scoping.require_administer(user, row, [c.queue for c in plan.changes])
    return plan


def _accepted(plan: ConfigPlan) -> ConfigImport:
    if plan.refusals or plan.parsed is None:
        refusal = plan.refusals[0]
        raise ServiceError(refusal.location or "config", refusal.reason)
    return plan.parsed


@transaction.atomic
def keep_planned_config(
    data: bytes | str,
    *,
    partition: str = DEFAULT_PARTITION,
    cluster: str | None = None,
    filename: str = "queues.yaml",
    user: UserLike = None,
    now: datetime | None = None,
) -> models.ConfigVersion:
    """Keep the proposed config as a version marked ``planned`` (never the config in force).

    The partition's flag, its quota changes and timers stay as they are.

    Raises:
        ServiceError: unknown partition, or a config the scheduler would refuse
            (naming the line).
    """
    plan = plan_proposed_config(
        data, partition=partition, cluster=cluster, filename=filename, now=now
    )
    parsed = _accepted(plan)
    spec = parsed.partition(plan.partition)
    row = models.Partition.objects.select_for_update().get(
        pk=_partition(plan.partition, cluster).pk
    )
    return store_config_version(
        row,
        parsed,
        spec,
        filename=filename,
        warnings=plan.warnings,
        user=user,
        now=now or utcnow(),
        planned=True,
    )


@dataclass(frozen=True)
class ScheduledPlan:
    """The quota changes a plan's scheduling saved, and what it could not schedule."""

    changes: tuple[models.QuotaChange, ...]
    not_scheduled: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "changes": [
                {
                    "id": c.pk,
                    "queue": c.queue_path,
                    "state": c.state,
                    "deadline": c.deadline.isoformat() if c.deadline else None,
                    "reason": c.reason,
                }
                for c in self.changes
            ],
            "not_scheduled": list(self.not_scheduled),
        }


def schedule_planned_config(
    data: bytes | str,
    *,
    partition: str = DEFAULT_PARTITION,
    cluster: str | None = None,
    filename: str = "queues.yaml",
    user: UserLike = None,
    now: datetime | None = None,
) -> ScheduledPlan:
    """Save every change of max or delay in the plan as a quota change, all or none.

    Each goes through :func:`dashboard.services.schedule_quota_change` (timer
    decided there, deepest queue first as a config import does).  Guaranteed
    changes and added or removed queues cannot be scheduled as quota changes:
    they are listed in ``not_scheduled`` (applying the config does those).

    Raises:
        ServiceError: unknown partition, a refused config, or a change the
            scheduling refuses (for example a max not above the guarantee with a
            delay); nothing is saved then.
    """
    when = now or utcnow()
    plan = plan_proposed_config(
        data, partition=partition, cluster=cluster, filename=filename, now=when, user=user
    )
    _accepted(plan)
    row = _partition(plan.partition, cluster)
    saved: list[models.QuotaChange] = []
    skipped: list[str] = []
    ordered = sorted(plan.changes, key=lambda c: (-c.queue.count("."), c.queue))
    with transaction.atomic():
        for c in ordered:
            if c.kind != "changed":
                skipped.append(f"{c.queue}: queue {c.kind} (apply the config to do this)")
                continue
            kwargs: dict[str, Any] = {}
            if c.old_max != c.new_max:
                kwargs["new_max"] = c.new_max
            if c.old_delay_seconds != c.delay_seconds:
                kwargs["new_delay"] = c.delay_seconds
            if c.old_guaranteed != c.new_guaranteed:
                skipped.append(
                    f"{c.queue}: guaranteed change (a quota change holds max and delay only; "
                    "apply the config to do this)"
                )
            if not kwargs:
                continue
            try:
                saved.append(schedule_quota_change(row, c.queue, user=user, now=when, **kwargs))
            except ServiceError as exc:
                raise ServiceError(exc.field, f"{c.queue}: {exc.message}") from exc
    return ScheduledPlan(tuple(saved), tuple(skipped))


def _lf(data: bytes | str) -> bytes | str:
    """*data* with CRLF and lone CR line ends made LF."""
    if isinstance(data, str):
        return data.replace("\r\n", "\n").replace("\r", "\n")
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


@dataclass(frozen=True)
class PlanHandback:
    queues_yaml: str
    configmap: str
    kubectl_patch: str
    configmap_name: str
    namespace: str

    def to_dict(self) -> dict[str, str]:
        return {
            "queues_yaml": self.queues_yaml,
            "configmap": self.configmap,
            "kubectl_patch": self.kubectl_patch,
            "configmap_name": self.configmap_name,
            "namespace": self.namespace,
        }


def planned_config_handback(
    data: bytes | str,
    *,
    partition: str = DEFAULT_PARTITION,
    cluster: str | None = None,
    filename: str = "queues.yaml",
    user: UserLike = None,
) -> PlanHandback:
    """The proposed config as queues.yaml, ConfigMap and ``kubectl patch`` (nothing stored).

    The ConfigMap keeps the name, namespace and other settings of a pasted
    ConfigMap, else those of the partition's cluster source, else of the config
    in force, else ``yunikorn-configs`` in ``yunikorn``.

    Raises:
        ServiceError: a config the scheduler would refuse (naming the line).
        QueueAccessDenied: a user the queue ACLs restrict, whose plan of the config
            touches a queue it does not administer.
    """
    from dashboard.sources.models import ClusterSource

    if user is not None and scoping.is_tenant(user):
        plan_proposed_config(
            data, partition=partition, cluster=cluster, filename=filename, user=user
        )

    size = len(data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data)
    check_upload_size(filename, size)
    # a browser's form sends its text with CRLF line ends; the YAML handed back is LF only
    data = _lf(data)
    try:
        parsed = parse_config(data, filename=filename, max_queues=config_queue_limit())
    except TooManyConfigQueues as exc:
        raise too_many_config_queues(exc) from exc
    except ImportFailure as exc:
        raise ServiceError(exc.location or "config", exc.message) from exc
    meta = parsed.configmap or {}
    row = find_partition(partition, cluster)
    source = (
        ClusterSource.objects.filter(cluster=row.cluster_id, partition=partition).first()
        if row is not None
        else None
    )
    name = meta.get("name") or (source.configmap_name if source else None) or "yunikorn-configs"
    namespace = meta.get("namespace") or (source.namespace if source else None) or "yunikorn"
    extra: dict[str, str] | None = dict(parsed.extra) if parsed.extra else None
    if extra is None:
        version = latest_config(row) if row is not None else None
        kept = version.parsed.get("extra") if version and isinstance(version.parsed, dict) else None
        extra = kept if isinstance(kept, dict) and kept else None
    configmap = configmap_of(parsed, parsed.text, name=name, namespace=namespace, extra=extra)
    return PlanHandback(
        queues_yaml=parsed.text,
        configmap=configmap,
        kubectl_patch=kubectl_patch_command(name, namespace, parsed.text),
        configmap_name=name,
        namespace=namespace,
    )
