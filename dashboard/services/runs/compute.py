"""What the engine answers for a stored run, with its victims' details (no writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from dashboard import models
from dashboard.plumbing.clock import epoch
from dashboard.plumbing.errors import ServiceError
from dashboard.services.engine_state_cache import ask_from_row, cluster_from_snapshot, engine_state
from dashboard.services.explain.reasons import reason_words
from dashboard.services.runs.requests import typed_ask
from dashboard.services.snapshots.spans import snapshot_allocations
from engine import model as em
from engine.preempt import preempt
from engine.quota import plan_quota_change
from engine.rounds import run_round


class RunAnswer(TypedDict):
    result: dict[str, object]
    outcome: str
    claimed: dict[str, int] | None
    target: dict[str, int] | None
    alerts: list[str]
    victims: list[dict[str, object]]


def victim_rows(
    snapshot: models.ClusterSnapshot,
    keys: Sequence[tuple[str, str, str]],
) -> list[dict[str, object]]:
    """Victim details (queue, node, resources) for (allocation key, ask, leaf) triples."""
    # plain tuples: model instances of a related manager would each reload their
    # deferred snapshot id (one query per victim)
    rows = {
        row[0]: row
        for row in snapshot_allocations(snapshot)
        .filter(key__in=[k for k, _, _ in keys])
        .values_list("key", "app", "queue", "node", "resources")
    }
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    for key, ask, leaf in keys:
        if key in seen:
            continue
        seen.add(key)
        a = rows.get(key)
        out.append(
            {
                "allocation_key": key,
                "ask": ask,
                "app": a[1] if a else "",
                "queue": a[2] if a else leaf,
                "leaf": leaf or (a[2] if a else ""),
                "node": a[3] if a else "",
                "resources": dict(a[4]) if a else {},
            }
        )
    return out


def compute_run(run: models.PreemptionRun) -> RunAnswer:
    """Call the engine for *run* (no writes)."""
    snapshot = run.snapshot
    if snapshot is None:
        raise ServiceError("snapshot", "the run's snapshot was deleted")
    now = engine_state(snapshot).now
    req = run.request
    kind = run.kind
    if kind == models.PreemptionRun.Kind.WHATIF_PREEMPT:
        if req.get("ask_key"):
            ask = ask_from_row(snapshot.asks.get(key=req["ask_key"]))
        else:
            ask = typed_ask(req.get("ask"), snapshot)
        state = engine_state(snapshot)
        with state.preemption_lock:  # the snapshot's preemption state, built once
            pa = preempt(state.preemption, ask, now)
        return {
            "result": pa.to_dict(),
            "outcome": pa.status,
            "claimed": None,
            "target": None,
            # the guarantee rule in words true of the ask's queue (the result keeps the
            # engine's own)
            "alerts": [reason_words(state.queues, ask.queue, pa.reason)] if pa.reason else [],
            "victims": victim_rows(snapshot, [(k, ask.key, "") for k in pa.victims]),
        }
    if kind == models.PreemptionRun.Kind.ROUND:
        cluster = cluster_from_snapshot(snapshot)
        by_key = {a.key: a for a in snapshot.asks.all()}
        asks = tuple(ask_from_row(by_key[k]) for k in req.get("ask_keys", []) if k in by_key)
        ra = run_round(cluster, asks, req.get("max_preempted"), now)
        queue_of = {a.key: a.queue for a in asks}
        queues = engine_state(snapshot).queues
        # the guarantee rule in words true of each ask's queue, as for one ask
        statuses = [r.status for r in ra.results]
        if ra.capped:
            outcome = "capped"
        elif "preempted" in statuses:
            outcome = "preempted"
        elif statuses and all(o == "fits" for o in statuses):
            outcome = "fits"
        else:
            outcome = "not_possible" if statuses else "no_asks"
        return {
            "result": ra.to_dict(),
            "outcome": outcome,
            "claimed": dict(ra.preempted_total),
            "target": req.get("max_preempted"),
            "alerts": [
                f"{r.ask}: {reason_words(queues, queue_of.get(r.ask, ''), r.reason)}"
                for r in ra.results
                if r.reason
            ],
            "victims": victim_rows(
                snapshot, [(k, r.ask, "") for r in ra.results for k in r.victims]
            ),
        }
    if kind in (
        models.PreemptionRun.Kind.WHATIF_QUOTA,
        models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
    ):
        enforcing = kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT
        part = run.partition
        cluster = cluster_from_snapshot(
            snapshot,
            partition=em.Partition(part.quota_preemption_enabled, part.miss) if enforcing else None,
        )
        running = frozenset(
            models.QuotaChange.objects.filter(
                partition=run.partition, state=models.QuotaChange.State.RUNNING
            )
            .exclude(queue_path=run.queue)
            .values_list("queue_path", flat=True)
        )
        state = engine_state(snapshot)
        qa = plan_quota_change(
            cluster,
            str(req["queue"]),
            req.get("new_max"),
            epoch(run.started_at) if enforcing and run.started_at else now,
            running=running if enforcing else frozenset(),
            # the snapshot's own cluster: its queue snapshot is built once, in its state
            snapshot=state.queues if cluster is state.cluster else None,
            delay=_change_delay(req) if enforcing else None,
        )
        answer = qa.to_dict()
        leaf_of = {k: leaf for leaf, plan in qa.leaves.items() for k in plan.victims}
        return {
            "result": answer,
            "outcome": qa.status,
            "claimed": dict(qa.claimed),
            "target": dict(qa.preemptable),
            "alerts": list(qa.alerts),
            "victims": victim_rows(snapshot, [(k, "", leaf_of.get(k, "")) for k in qa.victims]),
        }
    raise ServiceError("kind", f"unknown run kind {kind!r}")


def _change_delay(request: dict[str, Any]) -> float | None:
    """The delay of the quota change an enforcement run fires (its timer ran that long),
    which the snapshot may not show yet (a change setting its own delay); None without
    a change."""
    change = request.get("change")
    if change is None:
        return None
    delay = models.QuotaChange.objects.filter(pk=change).values_list("delay", flat=True).first()
    return float(delay) if delay else None
