"""The firings of a plan: the waiting timers fired in order on one evolving cluster
(each firing's quota preemption planned by :func:`engine.quota.plan_quota_change`
with the victims of the earlier ones already preempted), and the scenario of one
firing for ``python -m engine``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dashboard.importers.export import scenario_json
from dashboard.planning.answer import ConfigPlan, PlannedChange, Victim
from dashboard.planning.chain import ChainedCluster
from dashboard.planning.changes import Entry, instant_text
from engine import timers
from engine.quota import QuotaAnswer, plan_quota_change
from engine.scenario import cluster_to_dict


def simulate(
    entries: Sequence[Entry],
    chain: ChainedCluster | None,
    enabled: bool,
    rules: timers.RuleSet,
) -> None:
    """Fire the waiting timers in order on one evolving cluster (engine.md 5, "Tick")."""
    by_path = {e.change.queue: e for e in entries if e.deadline is not None}
    states = {p: timers.TimerState.waiting(e.deadline or 0.0) for p, e in by_path.items()}
    order = 0
    for t in sorted({e.deadline for e in by_path.values() if e.deadline is not None}):
        for path in timers.due_queues(states, t):
            e = by_path[path]
            order += 1
            c = e.change
            changes: dict[str, Any] = {"order": order}
            if chain is None:
                changes.update(
                    status="unknown",
                    fire_reason="no cluster snapshot: what this firing preempts is unknown",
                )
                e.change = dataclasses.replace(c, **changes)
                states[path] = timers.TimerState.idle()
                continue
            usage = chain.usage(path)
            changes["usage_at_firing"] = usage
            changes["taken_before"] = tuple(chain.taken)
            step = timers.timer_step(
                states[path],
                timers.Tick(
                    max=c.new_max,
                    usage=usage,
                    delay=c.delay_seconds or 0.0,
                    enabled=enabled,
                ),
                t,
                rules=rules,
            )
            if step.action != "start_preemption":
                changes.update(status="not_needed", fire_reason=step.note)
            else:
                answer = plan_quota_change(
                    chain.base, path, step.plan_max, t, snapshot=chain.snapshot
                )
                victims = _victims(chain, answer)
                chain.take({leaf: plan.victims for leaf, plan in answer.leaves.items()})
                changes.update(
                    status=answer.status,
                    fire_reason=step.note,
                    preemptable=dict(answer.preemptable),
                    claimed=dict(answer.claimed),
                    missed=dict(answer.missed),
                    victims=victims,
                    leaves={leaf: plan.victims for leaf, plan in answer.leaves.items()},
                    alerts=answer.alerts,
                    answer=answer,
                )
            e.change = dataclasses.replace(c, **changes)
            states[path] = timers.TimerState.idle()


def order_notes(firings: Sequence[PlannedChange]) -> tuple[str, ...]:
    """Where the plan's order may not be the scheduler's (engine.md 5.1, "Order").

    The plan fires deepest first on equal deadlines; yunikorn-core walks the tree top
    down once a second, so when a queue and one of its descendants are due within the
    same second it starts the queue's quota preemption and skips the subtree then. One
    note per such queue, naming the descendants, in firing order.
    """
    fired = [c for c in firings if c.fires_at is not None]
    notes: list[str] = []
    for parent in fired:
        at = parent.fires_at or 0.0
        below = [
            c.queue
            for c in fired
            if c.queue.startswith(parent.queue + ".")
            and abs((c.fires_at or 0.0) - at) < timers.SCHEDULER_TICK_SECONDS
        ]
        if not below:
            continue
        notes.append(
            f"{parent.queue} and {', '.join(below)} are due within the same second "
            f"({instant_text(at)}): this plan fires the deeper queue first; the scheduler "
            f"walks the tree top down each second, so it would start {parent.queue}'s quota "
            "preemption first and skip the queues below it in that second. What each takes "
            "in the cluster may differ from this plan."
        )
    return tuple(notes)


def _victims(chain: ChainedCluster, answer: QuotaAnswer) -> tuple[Victim, ...]:
    snap = chain.snapshot
    out: list[Victim] = []
    for leaf, plan in answer.leaves.items():
        wanted = set(plan.victims)
        found = {a.key: a for a in snap.queue(leaf).allocations if a.key in wanted}
        for key in plan.victims:
            a = found[key]
            out.append(Victim(a.key, a.app, a.queue, a.node, dict(a.resources)))
    return tuple(out)


def firing_scenario(plan: ConfigPlan, change: PlannedChange) -> dict[str, Any]:
    """The scenario ``python -m engine`` answers with this firing's quota preemption.

    The cluster as it stands at the firing (the applied config's limits, the
    victims of every earlier firing preempted) plus the ``quota_change`` request
    for the queue's max, at ``now`` = the firing time.

    Raises:
        ValueError: the change does not fire, or the plan has no cluster.
    """
    if plan.cluster is None or change.fires_at is None or change.order is None:
        raise ValueError(f"{change.queue} does not fire in this plan")
    gone = set(change.taken_before)
    cluster = plan.cluster
    if gone:
        cluster = dataclasses.replace(
            cluster,
            allocations=tuple(
                dataclasses.replace(a, preempted=True) if a.key in gone else a
                for a in cluster.allocations
            ),
        )
    doc = cluster_to_dict(cluster)
    doc["now"] = change.fires_at
    request = {
        "type": "quota_change",
        "queue": change.queue,
        "new_max": None if change.new_max is None else dict(change.new_max),
    }
    return scenario_json(doc, request)
