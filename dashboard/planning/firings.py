"""The firings of a plan: the waiting timers fired in the rule set's order (the scheduler's
walk, or the seed's deepest first) on one evolving cluster
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
    """Fire the waiting timers in the rule set's order on one evolving cluster.

    ``scheduler`` (engine.md 5.1, "Tick"): the scheduler's check at each deadline, top
    down with :func:`engine.timers.tick_queues`: a parent and its child due in the same
    second run the parent, the child held until the parent's run completes (the plan
    takes a run to complete before the next second, so the child is checked again one
    second later, on the usage the parent left); a waiting timer whose queue is within
    its max at a check is cleared (``not_needed``); nothing fires with the flag off.
    ``seed`` (engine.md 5, "Tick"): due queues deepest first.
    """
    by_path = {e.change.queue: e for e in entries if e.deadline is not None}
    states = {p: timers.TimerState.waiting(e.deadline or 0.0) for p, e in by_path.items()}
    counter = [0]
    if rules == "seed":
        for t in sorted({e.deadline for e in by_path.values() if e.deadline is not None}):
            for path in timers.due_queues(states, t):
                _fire(by_path[path], states, chain, enabled, rules, t, counter)
        return
    checks = sorted({e.deadline for e in by_path.values() if e.deadline is not None})
    while checks:
        t = checks.pop(0)
        facts = {
            p: timers.QueueFacts(
                max=e.change.new_max,
                usage=_timer_usage(chain, p, e.change.new_max),
                delay=e.change.delay_seconds or 0.0,
                enabled=enabled,
            )
            for p, e in by_path.items()
            if states[p].is_waiting
        }
        ran = False
        for path, decision in timers.tick_queues(states, facts, t, rules=rules):
            if decision.action == "start_preemption":
                _fire(by_path[path], states, chain, enabled, rules, t, counter)
                states[path] = timers.TimerState.running(t, by_path[path].change.new_max)
                ran = True
            elif decision.action == "cancelled":
                _clear(by_path[path], states, chain, decision.note, t, counter)
        if not ran:
            continue
        # the runs complete before the next check; the queues they held are checked then
        for p, st in states.items():
            if st.is_running:
                states[p] = timers.TimerState.idle()
        later = t + timers.SCHEDULER_TICK_SECONDS
        if any(st.is_waiting and (st.deadline or 0.0) <= later for st in states.values()):
            checks = sorted({*checks, later})


def _timer_usage(chain: ChainedCluster | None, path: str, max_: Any) -> Any:
    usage = chain.timer_usage(path, "scheduler") if chain is not None else None
    # no snapshot: usage unknown, taken as over the max (as the plan's timers are)
    return usage if usage is not None else {t: q + 1 for t, q in (max_ or {}).items()}


def _clear(
    e: Entry,
    states: dict[str, timers.TimerState],
    chain: ChainedCluster | None,
    note: str,
    t: float,
    counter: list[int],
) -> None:
    """A waiting timer cleared at the check at *t*: usage within the max (rule set
    ``scheduler``); it is listed in firing order as not needed."""
    counter[0] += 1
    usage = chain.usage(e.change.queue) if chain is not None else None
    e.change = dataclasses.replace(
        e.change,
        order=counter[0],
        fires_at=t,
        status="not_needed",
        fire_reason=f"the scheduler's check clears the timer: {note}",
        usage_at_firing=usage,
        taken_before=tuple(chain.taken) if chain is not None else (),
    )
    states[e.change.queue] = timers.TimerState.idle()


def _fire(
    e: Entry,
    states: dict[str, timers.TimerState],
    chain: ChainedCluster | None,
    enabled: bool,
    rules: timers.RuleSet,
    t: float,
    counter: list[int],
) -> None:
    """*e*'s timer fires at *t*: its quota preemption planned on the chain as it stands."""
    path = e.change.queue
    counter[0] += 1
    c = e.change
    changes: dict[str, Any] = {"order": counter[0], "fires_at": t}
    if chain is None:
        changes.update(
            status="unknown",
            fire_reason="no cluster snapshot: what this firing preempts is unknown",
        )
        e.change = dataclasses.replace(c, **changes)
        states[path] = timers.TimerState.idle()
        return
    usage = chain.usage(path)
    changes["usage_at_firing"] = usage
    changes["taken_before"] = tuple(chain.taken)
    step = timers.timer_step(
        timers.TimerState.waiting(t),
        timers.Tick(
            max=c.new_max,
            usage=chain.timer_usage(path, rules),
            delay=c.delay_seconds or 0.0,
            enabled=enabled,
        ),
        t,
        rules=rules,
    )
    if step.action != "start_preemption":
        changes.update(status="not_needed", fire_reason=step.note)
    else:
        answer = plan_quota_change(chain.base, path, step.plan_max, t, snapshot=chain.snapshot)
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


def order_notes(
    firings: Sequence[PlannedChange], rules: timers.RuleSet = timers.DEFAULT_RULES
) -> tuple[str, ...]:
    """Where the plan's order may not be the scheduler's (engine.md 5.1, "Order").

    None under rule set ``scheduler``: its plan walks as the scheduler does.  Under
    ``seed`` the plan fires deepest first on equal deadlines; yunikorn-core walks the tree top
    down once a second, so when a queue and one of its descendants are due within the
    same second it starts the queue's quota preemption and skips the subtree then. One
    note per such queue, naming the descendants, in firing order.
    """
    if rules == "scheduler":
        return ()
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
