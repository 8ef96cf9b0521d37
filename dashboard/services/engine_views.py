"""Read-only engine views of a stored snapshot for the pages (preemptable, victim reasons)."""

from __future__ import annotations

from dashboard import display, models
from dashboard.services.clusters import engine_state
from dashboard.services.errors import ServiceError
from engine import explain, queues
from engine.errors import ScenarioError


def queue_preemptable(snapshot: models.ClusterSnapshot) -> dict[str, dict[str, int] | None]:
    """The engine's ``preemptable(Q)`` for every queue of a stored snapshot (its cached state)."""
    snap = engine_state(snapshot).queues
    return {info.path: queues.preemptable(snap, info.path) for info in snap}


#: Reason texts for administrators: resources in cores and binary bytes, UTC times.
EXPLAIN_TEXT = explain.TextFormat(
    resource=display.format_resource,
    instant=display.format_instant,
    duration=display.format_duration,
)


def explain_victims(
    snapshot: models.ClusterSnapshot, queue_path: str, *, limit: int | None = None
) -> dict[str, object]:
    """Why each allocation of *queue_path* would (not) be a quota victim, as a dict.

    Raises:
        ServiceError: naming the field, for an unknown queue.
    """
    state = engine_state(snapshot)
    try:
        answer = explain.explain_victims(
            state.cluster,
            queue_path,
            now=state.now,
            limit=limit,
            text=EXPLAIN_TEXT,
        )
    except ScenarioError as exc:
        raise ServiceError(exc.field or "queue", exc.message) from exc
    return answer.to_dict()
