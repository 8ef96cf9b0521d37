"""Quota-decrease preemption: target, parent distribution, leaf victims (engine.md section 4).

When an administrator lowers a queue's ``max`` below its usage, this module
plans which allocations to preempt so that the new max comes into effect:

- the *target* (the seed's "preemptable resources", 4.2): per type of the new
  max, how much usage must shrink;
- for a parent queue, the target is split over its children in proportion to
  their *releasable* resources (usage above guaranteed), exactly and with the
  largest-remainder rule, recursively down to the leaves (4.5);
- in each leaf, candidates are taken in the seed's order (non-originators,
  lower priority, opted-in, youngest: :func:`quota_victim_key`) until the
  leaf's share is met, never taking the leaf or any ancestor below its
  guaranteed amount in a type the victim uses (4.3, 4.4);
- the answer says whether the target was met (``enforced``), missed within
  the partition's ``miss`` tolerance (``best_effort``) or by more
  (``does_not_help``), with one human-readable alert per problem (4.6).

The seed's rules on their own (order, floor, target, split) are in
:mod:`engine.quota_rules`, the answer in :mod:`engine.quota_answer`; this
module re-exports their public names.  *When* a plan runs (the delay timers)
is ``engine.timers``' business: :func:`plan_quota_change` computes the plan
regardless of the delay and only reports it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.errors import ScenarioError
from engine.model import Allocation, Cluster
from engine.queues import Snapshot, build_snapshot
from engine.quota_answer import QUOTA_STATUSES, LeafPlan, QuotaAnswer, QuotaStatus
from engine.quota_rules import (
    GuaranteeFloor,
    OrderKey,
    format_resource,
    format_types,
    quota_target,
    quota_victim_key,
    releasable,
    split_target,
)
from engine.resources import Resource

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison


__all__ = [
    "QUOTA_STATUSES",
    "GuaranteeFloor",
    "LeafPlan",
    "OrderKey",
    "QuotaAnswer",
    "QuotaStatus",
    "format_resource",
    "plan_quota_change",
    "quota_target",
    "quota_victim_key",
    "releasable",
    "split_target",
]


# -- the plan ---------------------------------------------------------------------


@dataclass(slots=True)
class _LeafRun:
    """Mutable bookkeeping of one leaf while its victims are taken."""

    path: str
    share: dict[str, int]
    need: dict[str, int]
    victims: list[Allocation]
    blockers: set[int]
    uncovered: list[str] = field(default_factory=list)
    freed: dict[str, int] = field(default_factory=dict)
    """Everything the leaf's victims free, all types."""


def _in_order(
    cands: list[tuple[SupportsRichComparison, int, Allocation]],
    share: Mapping[str, int],
    usage: Mapping[str, int],
) -> Iterator[Allocation]:
    """The candidates in key order, without sorting them all when few will be needed.

    When the share is a small part of the leaf's usage the plan stops early, so a
    heap (linear to build, one pop per candidate looked at) beats a full sort;
    when much of the leaf goes, a sort is cheaper per candidate.
    """
    small = all(q * 4 <= usage.get(t, 0) for t, q in share.items())
    if not small:
        for entry in sorted(cands):
            yield entry[2]
        return
    heap = list(cands)
    heapq.heapify(heap)
    while heap:
        yield heapq.heappop(heap)[2]


def _take_leaf_victims(
    snap: Snapshot,
    work: list[dict[str, int]],
    leaf: int,
    share: Mapping[str, int],
    order_key: OrderKey,
) -> _LeafRun:
    """Engine.md 4.3 and 4.4 for one leaf, lowering the shared working usage *work*.

    Only the guaranteed queues' entries of *work* are kept up to date: the floor
    is their only reader.
    """
    share_types = frozenset(share)
    cands = [
        (order_key(a), i, a)
        for i, a in enumerate(snap.info(leaf).allocations)
        if not a.required_node and not a.preempted and not share_types.isdisjoint(a.resources)
    ]
    need = dict(share)
    unmet = sum(1 for n in need.values() if n > 0)
    run = _LeafRun(path=snap.paths[leaf], share=dict(share), need=need, victims=[], blockers=set())
    floor = GuaranteeFloor(snap, work, leaf)
    guarded = [work[x] for x in floor.queues]
    freed = run.freed
    for v in _in_order(cands, share, snap.usage_by_index[leaf]):
        if not unmet:
            break  # target reached
        vr = v.resources
        for t, q in vr.items():
            if q > 0 and need.get(t, 0) > 0:
                break
        else:
            continue  # helps no unmet type
        if guarded:
            blocker = floor.blocker(vr)
            if blocker >= 0:
                run.blockers.add(blocker)
                continue
            for u in guarded:
                for t, q in vr.items():
                    u[t] = u.get(t, 0) - q
        for t, q in vr.items():
            freed[t] = freed.get(t, 0) + q
            n = need.get(t)
            if n is not None:
                if n > 0 >= n - q:
                    unmet -= 1
                need[t] = n - q
        run.victims.append(v)
    if unmet:
        # a share type that no candidate uses at all: the leaf cannot help there
        covered = {t for _, _, a in cands for t, q in a.resources.items() if q > 0 and t in need}
        run.uncovered = sorted(t for t, n in need.items() if n > 0 and t not in covered)
    return run


def _distribute(
    snap: Snapshot,
    queue: int,
    target: Mapping[str, int],
    running: frozenset[str],
    leaf_shares: dict[int, dict[str, int]],
    shares_out: dict[str, dict[str, dict[str, int]]],
    alerts: list[str],
) -> None:
    """Engine.md 4.5: split *target* of parent *queue* over its children, down to the leaves.

    Depth first in path order with an explicit stack, so that absurdly deep trees
    cannot hit the recursion limit.
    """
    stack: list[tuple[int, Mapping[str, int]]] = [(queue, target)]
    while stack:
        q, want = stack.pop()
        path = snap.paths[q]
        kids = [
            c for c in snap.children[q] if snap.usage_by_index[c] and snap.paths[c] not in running
        ]
        rel = {
            snap.paths[c]: releasable(snap.usage_by_index[c], snap.guaranteed_by_index[c])
            for c in kids
        }
        shares, unreleasable = split_target(want, rel)
        if unreleasable:
            alerts.append(
                f"no child of {path} can release {format_types(unreleasable)}: every child "
                "is empty, already running a quota preemption, or within its guarantee there"
            )
        if shares:
            shares_out[path] = shares
        parents: list[tuple[int, Mapping[str, int]]] = []
        for child_path, share in shares.items():
            c = snap.index[child_path]
            if snap.is_leaf[c]:
                leaf_shares[c] = share
            else:
                parents.append((c, share))
        stack.extend(reversed(parents))  # the first child in path order is popped first


def _effective_delay(snap: Snapshot, queue: int) -> float:
    return float(snap.info(queue).quota_preemption_delay)


def _status(
    target: Mapping[str, int], claimed: Mapping[str, int], miss: float
) -> tuple[QuotaStatus, dict[str, int]]:
    missed = {t: target[t] - claimed.get(t, 0) for t in target if claimed.get(t, 0) < target[t]}
    if not missed:
        return "enforced", missed
    # float division on purpose: it rounds exactly like the ``miss`` fraction read from
    # JSON, so a miss written as 15/55 or 3/11 compares equal to a 15-of-55 shortfall
    worst = max(missed[t] / target[t] for t in missed)
    return ("best_effort" if worst <= miss else "does_not_help"), missed


def plan_quota_change(
    cluster: Cluster,
    queue: str,
    new_max: Resource | None,
    now: float,
    running: frozenset[str] = frozenset(),
    *,
    order_key: OrderKey = quota_victim_key,
    snapshot: Snapshot | None = None,
    delay: float | None = None,
) -> QuotaAnswer:
    """Plan the preemption that enforces *new_max* on *queue* (engine.md section 4).

    Args:
        cluster: the cluster state.
        queue: path of the queue whose max is lowered (leaf or parent).
        new_max: the new max; ``None`` or ``{}`` means "not set" (nothing to enforce).
        now: seconds since the epoch; only used for ``start_at``.
        running: paths of queues already running a quota preemption; they and
            their subtrees take no part in a parent's distribution (4.5 step 1).
        order_key: the victim cost function (default: the seed's order, 4.3).
        snapshot: a snapshot of *cluster* already built by the caller, to save time.
        delay: the quota preemption delay in force for this change, in seconds, when it
            is not the snapshot's (a change that sets its own delay, whose timer ran);
            ``None``: the queue's effective delay in *cluster*.

    Returns:
        The plan; ``not_needed`` (no victims) when the partition flag is off,
        the new max is not set, or usage is within it.

    Raises:
        ScenarioError: *queue* is not in the tree.
    """
    snap = build_snapshot(cluster) if snapshot is None else snapshot
    if queue not in snap:
        raise ScenarioError("request.queue", f"unknown queue {queue!r}")
    qi = snap.index[queue]
    limit = dict(new_max) if new_max else None
    if delay is None:
        delay = _effective_delay(snap, qi)
    start_at = now + delay if delay > 0 else None
    target = quota_target(snap.usage_by_index[qi], limit)
    enabled = cluster.partition.quota_preemption_enabled

    alerts: list[str] = []
    if target and not enabled:
        alerts.append(
            f"quota preemption is disabled on the partition: the lowered max of {queue} "
            f"only applies to new requests; {format_resource(target)} stays over it"
        )
    if target and delay <= 0:
        alerts.append(
            f"the quota preemption delay of {queue} is 0: YuniKorn never enforces a "
            "lowered max when the delay is 0 (set a delay to enforce this plan)"
        )
    guaranteed = snap.guaranteed_by_index[qi]
    if limit and guaranteed:
        below = {t: m for t, m in limit.items() if t in guaranteed and m < guaranteed[t]}
        if below:
            alerts.append(
                f"new max below guaranteed on {queue}: new max {format_resource(below)}, "
                f"guaranteed {format_resource({t: guaranteed[t] for t in below})}; "
                "the guarantee limits what can be claimed"
            )

    if not target or not enabled:
        return QuotaAnswer(
            status="not_needed",
            queue=queue,
            preemptable=target,
            claimed=dict.fromkeys(target, 0),
            leaves={},
            victims=(),
            alerts=tuple(alerts),
            delay=delay,
            start_at=start_at,
        )

    leaf_shares: dict[int, dict[str, int]] = {}
    shares_out: dict[str, dict[str, dict[str, int]]] = {}
    if snap.is_leaf[qi]:
        leaf_shares[qi] = dict(target)
    else:
        _distribute(snap, qi, target, running, leaf_shares, shares_out, alerts)

    # one working usage for all leaves, so shared ancestors' floors see earlier victims
    work = [dict(u) for u in snap.usage_by_index]
    runs = [
        _take_leaf_victims(snap, work, leaf, leaf_shares[leaf], order_key)
        for leaf in sorted(leaf_shares, key=lambda i: snap.paths[i])  # path order
    ]

    victims: list[Allocation] = [v for run in runs for v in run.victims]
    claimed = dict.fromkeys(target, 0)
    for run in runs:  # a victim counts in every target type it frees (4.6)
        for t in target:
            claimed[t] += run.freed.get(t, 0)
    status, missed = _status(target, claimed, cluster.partition.miss)

    # alerts of the leaves, then of the guarantees that stopped victims, then the outcome
    unmet_by_blocker: dict[int, dict[str, int]] = {}
    for run in runs:
        if run.uncovered:
            alerts.append(
                f"leaf {run.path} has no allocation that can be preempted for "
                f"{format_types(run.uncovered)} (share {format_resource(run.share)})"
            )
        unmet = {t: n for t, n in run.need.items() if n > 0}
        if unmet:
            for b in run.blockers:
                acc = unmet_by_blocker.setdefault(b, {})
                for t, n in unmet.items():
                    acc[t] = acc.get(t, 0) + n
    for b in sorted(unmet_by_blocker, key=lambda i: snap.paths[i]):
        alerts.append(
            f"the guarantee of {snap.paths[b]} {format_resource(snap.guaranteed_by_index[b])} "
            f"stopped preemption: {format_resource(unmet_by_blocker[b])} of the target "
            "remains unmet"
        )
    miss = cluster.partition.miss
    if status == "best_effort":
        alerts.append(
            f"best effort on {queue}: {format_resource(missed)} of the target "
            f"{format_resource(target)} was not claimed, within the partition's miss of {miss:g}"
        )
    elif status == "does_not_help":
        alerts.append(
            f"preemption does not help on {queue}: {format_resource(missed)} of the target "
            f"{format_resource(target)} was not claimed, more than the partition's miss "
            f"of {miss:g}; the victims found are still listed"
        )

    leaves = {
        run.path: LeafPlan(
            preemptable=run.share,
            claimed={t: run.share[t] - run.need[t] for t in run.share},
            victims=tuple(v.key for v in run.victims),
        )
        for run in runs
    }
    return QuotaAnswer(
        status=status,
        queue=queue,
        preemptable=target,
        claimed=claimed,
        leaves=leaves,
        victims=tuple(v.key for v in victims),
        alerts=tuple(alerts),
        delay=delay,
        start_at=start_at,
        missed=missed,
        shares=shares_out,
    )
