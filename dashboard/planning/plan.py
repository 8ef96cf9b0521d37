"""The plan of a whole proposed config: what applying it now would change, start and preempt.

Given the config in force (per queue: max, guaranteed, effective quota
preemption delay, and any timer already pending), the proposed config's text,
the partition, the latest snapshot's cluster and ``now``, :func:`plan_config`
answers:

- the proposed config refused exactly as the importer refuses it (reason and
  line), or its warnings: the importer's pitfalls, the quota-change seed's
  "max above guaranteed when a delay is set" (a dashboard rule the scheduler does
  not enforce, so a warning here), the partition flag off while maxes are lowered;
- every queue whose max, guaranteed or quota delay changes, or that is added or
  removed, and for each change of max or delay the timer decision of
  :func:`engine.timers.timer_step` under the partition's timer rule set (the live
  timers' rules: ``scheduler`` or ``seed``; flag off or delay 0 start nothing) with
  the reason;
- the firings in the rule set's order (:func:`engine.timers.tick_queues`): under
  ``scheduler`` the scheduler's check at each deadline, top down, a parent due with
  its child run first and the child checked again a second later, a timer whose
  queue is within its max by then cleared (``not_needed``); under ``seed`` by
  deadline, deepest first on equal deadlines, with a warning naming each queue due
  within the same second as a descendant, which the scheduler would start first),
  each one's tick
  re-checked with :func:`engine.timers.timer_step` and its quota preemption
  planned by :func:`engine.quota.plan_quota_change` on *one evolving cluster*:
  the victims of earlier firings are already preempted (:class:`ChainedCluster`),
  and the applied config's guaranteed and max are in force throughout;
- per queue and cluster-wide totals of what would be preempted.

Nothing is stored: the caller (a service, the ``plan_config`` command, the API)
decides what to keep.  Framework-free: nothing here imports Django.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from dashboard.importers.config import ConfigImport, parse_config
from dashboard.importers.config.specs import DEFAULT_PARTITION
from dashboard.importers.errors import ImportFailure
from dashboard.planning.answer import ConfigPlan, QueueInForce, Refusal, refusal_of
from dashboard.planning.chain import ChainedCluster, overlay_limits
from dashboard.planning.changes import Entry, instant_text, pending_entry, plan_queue
from dashboard.planning.firings import order_notes, simulate
from engine import timers
from engine.model import Cluster, Partition


def plan_config(
    proposed: bytes | str,
    *,
    in_force: Mapping[str, QueueInForce],
    cluster: Cluster | None,
    now: float,
    partition: str = DEFAULT_PARTITION,
    filename: str = "queues.yaml",
    miss: float | None = None,
    in_force_enabled: bool | None = None,
    rules: timers.RuleSet = timers.DEFAULT_RULES,
) -> ConfigPlan:
    """Plan applying *proposed* now (see the module docstring).

    Args:
        proposed: the proposed config (queues.yaml or its ConfigMap).
        in_force: queue path -> what is in force (config, later changes, timers);
            queues the config in force does not define but the snapshot has are
            marked ``is_dynamic``.
        cluster: the latest snapshot's cluster (usage, allocations); ``None`` when
            the partition has no snapshot (timers assume usage above the new max, as
            the live scheduling does, and no victim can be planned).
        now: when the config would be applied (seconds since the epoch).
        partition: the partition planned.
        filename: for messages.
        miss: the partition's best-effort tolerance (default: the cluster's).
        in_force_enabled: the partition flag in force, to warn when the config flips it.
        rules: the partition's timer rule set (``scheduler`` or ``seed``).

    Returns:
        The plan; a refused config gives a plan with ``refusals`` and no change.
    """
    try:
        parsed = parse_config(proposed, filename=filename)
    except ImportFailure as exc:
        return _refused(partition, now, (refusal_of(exc, filename),), cluster)
    try:
        spec = parsed.partition(partition)
    except KeyError:
        names = ", ".join(p.name for p in parsed.partitions)
        refusal = Refusal(
            f"the config has no partition {partition!r} (it defines: {names})", None, "partition"
        )
        return _refused(partition, now, (refusal,), cluster, parsed=parsed)

    enabled = spec.quota_preemption_enabled
    warnings = list(parsed.warnings)
    new_queues = {q.path: q for q in spec.queues()}

    base_miss = cluster.partition.miss if cluster is not None else 0.0
    planned: Cluster | None = None
    if cluster is not None:
        limits = {
            path: (q.guaranteed, q.max, q.quota_preemption_delay) for path, q in new_queues.items()
        }
        planned = dataclasses.replace(
            cluster,
            root=overlay_limits(cluster.root, limits),
            partition=Partition(enabled, base_miss if miss is None else miss),
        )
    chain = ChainedCluster(planned) if planned is not None else None
    usage = {} if chain is None else {q.path: dict(q.usage) for q in chain.snapshot}

    entries: list[Entry] = []
    pending: list[Entry] = []
    for path in sorted(set(new_queues) | set(in_force)):
        entry = plan_queue(
            path, new_queues.get(path), in_force.get(path), chain, enabled, now, rules
        )
        if entry is not None:
            entries.append(entry)
        elif path in new_queues and path in in_force:
            before = in_force[path]
            if before.timer.is_waiting and before.timer.deadline is not None:
                pending.append(pending_entry(path, new_queues[path], before, chain, now))

    decreases = [e for e in entries if e.change.is_decrease and e.change.kind == "changed"]
    if not enabled and decreases:
        names = ", ".join(e.change.queue for e in decreases)
        warnings.append(
            f"quota preemption is disabled on partition {spec.name} "
            "(preemption.quotapreemptionenabled is not true): the lowered max of "
            f"{names} only applies to new requests; nothing is preempted"
        )
    if in_force_enabled is not None and in_force_enabled != enabled:
        warnings.append(
            f"this config turns quota preemption {'on' if enabled else 'off'} on partition "
            f"{spec.name}" + ("" if enabled else ": pending quota preemption timers stop firing")
        )
    if chain is None:
        warnings.append(
            f"partition {spec.name} has no cluster snapshot: usage is unknown, so the timers "
            "are shown as if every lowered max were exceeded and no victim can be planned"
        )
    for e in pending:
        warnings.append(
            f"{e.change.queue}: a quota preemption timer already waits (fires at "
            f"{instant_text(e.deadline or 0.0)}); this config leaves it alone and it fires in the "
            "same chain"
        )

    simulate([*entries, *pending], chain, enabled, rules)
    entries_sorted = sorted(
        entries,
        key=lambda e: (e.change.order is None, e.change.order or 0, e.change.queue),
    )
    plan = ConfigPlan(
        partition=spec.name,
        now=now,
        refusals=(),
        warnings=tuple(warnings),
        changes=tuple(e.change for e in entries_sorted),
        pending=tuple(e.change for e in sorted(pending, key=lambda e: e.change.order or 0)),
        quota_preemption_enabled=enabled,
        has_snapshot=chain is not None,
        parsed=parsed,
        timer_rules=rules,
        cluster=planned,
        usage=usage,
    )
    # where the scheduler's order differs from the plan's firings
    return dataclasses.replace(plan, warnings=plan.warnings + order_notes(plan.firings, rules))


def _refused(
    partition: str,
    now: float,
    refusals: tuple[Refusal, ...],
    cluster: Cluster | None,
    *,
    parsed: ConfigImport | None = None,
) -> ConfigPlan:
    return ConfigPlan(
        partition=partition,
        now=now,
        refusals=refusals,
        warnings=() if parsed is None else parsed.warnings,
        changes=(),
        pending=(),
        quota_preemption_enabled=None,
        has_snapshot=cluster is not None,
        parsed=parsed,
    )
