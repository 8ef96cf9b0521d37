"""Read-only engine views of a stored snapshot for the pages (preemptable, victim reasons,
why each inter-queue victim of a run is needed)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from dashboard import display, models
from dashboard.plumbing.errors import ServiceError
from dashboard.services.engine_state_cache import ask_from_row, engine_state
from dashboard.services.runs.requests import typed_ask
from engine import explain, queues
from engine import model as em
from engine.answers import PreemptAnswer, RoundAnswer
from engine.errors import ScenarioError

logger = logging.getLogger(__name__)


def queue_preemptable(snapshot: models.ClusterSnapshot) -> dict[str, dict[str, int] | None]:
    """The engine's ``preemptable(Q)`` for every queue of a stored snapshot.

    As stored at import; for a snapshot stored before that, from its (cached) engine state.
    """
    stored = (
        models.SnapshotPreemptable.objects.filter(snapshot=snapshot)
        .values_list("values", flat=True)
        .first()
    )
    if isinstance(stored, dict):
        return stored
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
    out = answer.to_dict()
    _mark_gang(state.gang, out)
    return out


def _mark_gang(gang: Mapping[str, Mapping[str, object]], explanation: dict[str, object]) -> None:
    """Say which candidates and exclusions are gang placeholders, with their task group.

    The engine knows no gangs; the scheduler reports them, and an administrator
    must see that a victim is a placeholder (taking it holds back its gang).
    """
    if not gang:
        return
    for part in ("candidates", "exclusions"):
        items = explanation.get(part)
        for item in items if isinstance(items, list) else ():
            facts = gang.get(str(item.get("key"))) if isinstance(item, dict) else None
            if facts is None:
                continue
            item.update(
                placeholder=facts["placeholder"],
                task_group=facts["task_group"],
                gang=facts["text"],
            )
            if part == "candidates" and isinstance(item.get("reasons"), list):
                item["reasons"] = [facts["text"], *item["reasons"]]


def explain_run_victims(run: models.PreemptionRun) -> dict[str, str]:
    """Why each victim of a finished preempt what-if or round is needed, by allocation key.

    What each victim frees on the chosen node and under which queue's max, replayed
    by the engine on the run's snapshot.  Empty for other kinds, unfinished runs,
    runs without victims or snapshot, and answers the snapshot no longer explains.
    """
    kind = run.kind
    snapshot = run.snapshot
    result = run.result
    if (
        kind not in (models.PreemptionRun.Kind.WHATIF_PREEMPT, models.PreemptionRun.Kind.ROUND)
        or run.status != models.PreemptionRun.Status.DONE
        or snapshot is None
        or not isinstance(result, dict)
    ):
        return {}
    req = run.request if isinstance(run.request, dict) else {}
    answer: PreemptAnswer | RoundAnswer
    try:
        if kind == models.PreemptionRun.Kind.WHATIF_PREEMPT:
            answer = PreemptAnswer.from_dict(result)
            keys = [answer.ask] if answer.victims else []
        else:
            answer = RoundAnswer.from_dict(result)
            # every ask: placed ones change the state later asks are explained against
            keys = [r.ask for r in answer.results] if any(r.victims for r in answer.results) else []
        if not keys:
            return {}
        if kind == models.PreemptionRun.Kind.WHATIF_PREEMPT and not req.get("ask_key"):
            asks: tuple[em.Ask, ...] = (typed_ask(req.get("ask"), snapshot),)
        else:
            asks = tuple(ask_from_row(row) for row in snapshot.asks.filter(key__in=keys))
        needed = explain.explain_needed_victims(
            engine_state(snapshot).cluster, asks, answer, text=EXPLAIN_TEXT
        )
    except (ScenarioError, ServiceError, ValueError, KeyError, TypeError) as exc:
        logger.warning("run %s: victims not explained: %s", run.pk, exc)
        return {}
    return {n.key: n.text for n in needed}
