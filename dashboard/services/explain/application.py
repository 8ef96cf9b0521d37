"""One application of a stored snapshot, as the application page shows it.

Its allocations and pending asks (from the snapshot's rows), what the snapshot
knows of the application itself (state, user, state history, gang task groups
and placeholders, when the source had them), and for every allocation whether
quota preemption would take it and why, from the engine's victim explanation
of the allocation's leaf (the same reasons as the victim explanation page).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard import models
from dashboard.plumbing.errors import ServiceError
from dashboard.services.explain.ask import why_pending
from dashboard.services.explain.preemption import explain_victims
from dashboard.services.snapshots.spans import snapshot_allocations, snapshot_applications


def _candidate_status(explanation: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Allocation key -> {candidate, rank, reasons} from one leaf's victim explanation."""
    out: dict[str, dict[str, Any]] = {}
    for c in explanation.get("candidates", []):
        out[str(c["key"])] = {
            "candidate": True,
            "rank": c["rank"],
            "reasons": [str(r) for r in c.get("reasons", [])],
            "inter_queue_excluded": bool(c.get("inter_queue_excluded")),
        }
    for e in explanation.get("exclusions", []):
        reasons = [r for r in e.get("reasons", [])]
        out[str(e["key"])] = {
            "candidate": not bool(e.get("quota_excluded")),
            "rank": None,
            "reasons": [
                f"{'quota' if r.get('scope') == 'quota' else 'inter-queue'}: {r.get('text')}"
                for r in reasons
            ],
            "inter_queue_excluded": any(r.get("scope") == "inter_queue" for r in reasons),
        }
    return out


def application_view(snapshot: models.ClusterSnapshot, app_id: str) -> dict[str, Any]:
    """Everything the application page shows for *app_id* in *snapshot*.

    Raises:
        ServiceError: ``app`` when the snapshot has no such application (no row,
            no allocation and no pending ask of it).
    """
    row = snapshot_applications(snapshot).filter(app_id=app_id).first()
    allocations = list(snapshot_allocations(snapshot).filter(app=app_id).order_by("queue", "key"))
    asks = list(snapshot.asks.filter(app=app_id).order_by("queue", "key"))
    if row is None and not allocations and not asks:
        raise ServiceError("app", f"application {app_id!r} is not in snapshot {snapshot.pk}")
    details: Mapping[str, Any] = row.details if row is not None and row.details else {}
    task_groups = (
        details.get("task_groups") if isinstance(details.get("task_groups"), Mapping) else {}
    )
    placeholder_keys = set(details.get("placeholder_keys") or [])
    status: dict[str, dict[str, Any]] = {}
    for leaf in sorted({a.queue for a in allocations}):
        try:
            status.update(_candidate_status(explain_victims(snapshot, leaf)))
        except ServiceError:
            continue  # a queue the engine does not know: no status for its allocations
    rows = []
    for a in allocations:
        s = status.get(a.key)
        rows.append(
            {
                "allocation": a,
                # the allocation row's own facts first (stored from the nodes' answer)
                "task_group": a.task_group or (task_groups or {}).get(a.key, ""),
                "placeholder": a.placeholder or a.key in placeholder_keys,
                "candidate": None if s is None else s["candidate"],
                "rank": None if s is None else s["rank"],
                "reasons": [] if s is None else s["reasons"],
            }
        )
    why = why_pending(snapshot, asks)
    queues = sorted(
        {a.queue for a in allocations}
        | {a.queue for a in asks}
        | ({row.queue} if row is not None and row.queue else set())
    )
    return {
        "app_id": app_id,
        "row": row,
        "queue": row.queue if row is not None and row.queue else (queues[0] if queues else ""),
        "queues": queues,
        "state": row.state if row is not None else "",
        "user": str(details.get("user") or ""),
        "groups": [str(g) for g in details.get("groups") or []],
        "submission_time": details.get("submission_time"),
        "state_log": [e for e in details.get("state_log") or [] if isinstance(e, Mapping)],
        "placeholders": [p for p in details.get("placeholders") or [] if isinstance(p, Mapping)],
        "task_groups": sorted({g for g in (task_groups or {}).values()}),
        "allocations": rows,
        "asks": [
            {"ask": k, "task_group": (task_groups or {}).get(k.key, ""), "why": why.get(k.key)}
            for k in asks
        ],
        "used": row.used if row is not None else None,
        "pending": row.pending if row is not None else None,
        "candidates": sum(1 for r in rows if r["candidate"]),
    }
