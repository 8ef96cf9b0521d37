"""Preemption run requests: checked, recorded as pending, and sent to a worker on commit."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from kombu.exceptions import OperationalError as BrokerError

from dashboard import models
from dashboard.access import scoping
from dashboard.celery import app as celery_app
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import IdempotencyConflict, ServiceError
from dashboard.plumbing.users import stored_user
from dashboard.services.engine_state_cache import engine_state
from dashboard.services.limits import validate_resource
from engine import model as em
from engine.errors import ScenarioError
from engine.scenario import parse_ask

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike

logger = logging.getLogger(__name__)


def validate_run_request(
    kind: str, snapshot: models.ClusterSnapshot, request: Mapping[str, object]
) -> tuple[dict[str, object], str]:
    """Check a run request before it is queued; returns (normalized request, queue)."""
    if kind == models.PreemptionRun.Kind.WHATIF_PREEMPT:
        key = request.get("ask_key")
        if key:
            row = snapshot.asks.filter(key=key).first()
            if row is None:
                raise ServiceError("ask_key", f"no pending ask {key!r} in snapshot {snapshot.pk}")
            return {"ask_key": row.key}, row.queue
        if request.get("ask") is None:
            raise ServiceError("ask", "give ask_key (a pending ask) or ask (a typed ask)")
        ask = typed_ask(request.get("ask"), snapshot)
        return {"ask": dict(request["ask"])}, ask.queue  # type: ignore[call-overload]  # checked by typed_ask
    if kind in (
        models.PreemptionRun.Kind.WHATIF_QUOTA,
        models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
    ):
        queue = _leaf_queue(snapshot, request.get("queue"), "queue")
        new_max = validate_resource(request.get("new_max"), "new_max")
        out: dict[str, object] = {"queue": queue, "new_max": new_max}
        if "change" in request:
            out["change"] = request["change"]
        return out, queue
    if kind == models.PreemptionRun.Kind.ROUND:
        keys = request.get("ask_keys")
        known = set(snapshot.asks.values_list("key", flat=True))
        if keys is None:
            chosen = sorted(known)
        else:
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise ServiceError("ask_keys", "must be a list of pending ask keys")
            missing = [k for k in keys if k not in known]
            if missing:
                raise ServiceError(
                    "ask_keys", f"no pending ask {missing[0]!r} in snapshot {snapshot.pk}"
                )
            chosen = list(dict.fromkeys(keys))
        cap = validate_resource(request.get("max_preempted"), "max_preempted")
        return {"ask_keys": chosen, "max_preempted": cap}, ""
    raise ServiceError("kind", f"unknown run kind {kind!r}")


def typed_ask(raw: object, snapshot: models.ClusterSnapshot) -> em.Ask:
    """Validate a typed ask against the snapshot's queue tree (engine validation)."""
    if not isinstance(raw, Mapping):
        raise ServiceError("ask", "must be an object")
    try:
        return parse_ask(dict(raw), engine_state(snapshot).kinds)
    except ScenarioError as exc:
        raise ServiceError(exc.field, exc.message) from exc


def _leaf_queue(snapshot: models.ClusterSnapshot, queue: object, field: str) -> str:
    if not isinstance(queue, str) or not queue:
        raise ServiceError(field, "is required")
    if not snapshot.queues.filter(path=queue).exists():
        raise ServiceError(field, f"unknown queue {queue!r} in snapshot {snapshot.pk}")
    return queue


def create_run(
    *,
    kind: str,
    snapshot: models.ClusterSnapshot,
    request: Mapping[str, object],
    user: UserLike = None,
    trigger: str = models.PreemptionRun.Trigger.API,
    idempotency_key: str | None = None,
    now: datetime | None = None,
    enqueue: bool = True,
) -> models.PreemptionRun:
    """Record a pending run and queue its task once the transaction commits.

    The same ``idempotency_key`` twice with the same request (kind, snapshot and
    request) returns the first run (no second run); with a different request it is
    refused, naming the key (a key names one request, never another one's run).

    Raises:
        IdempotencyConflict: the key was used by a run of a different request.
    """
    now = now or utcnow()
    # refused before the queue or ask is looked up: a refusal says nothing of what exists
    _refuse_before_lookup(kind, snapshot, request, user)
    normalized, queue = validate_run_request(kind, snapshot, request)
    # the queue ACLs of the config in force: a what-if of a queue the user administers;
    # a round (every pending ask) is the whole partition's, i.e. the root's
    scoping.require_administer(user, snapshot.partition, [queue or "root"])
    if idempotency_key:
        existing = models.PreemptionRun.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_request(existing, kind, snapshot, normalized, idempotency_key)
    try:
        with transaction.atomic():
            run = models.PreemptionRun.objects.create(
                partition=snapshot.partition,
                snapshot=snapshot,
                kind=kind,
                trigger=trigger,
                status=models.PreemptionRun.Status.PENDING,
                queue=queue,
                request=normalized,
                idempotency_key=idempotency_key or None,
                created_by=stored_user(user),
                queued_at=now,
            )
    except IntegrityError:
        existing = models.PreemptionRun.objects.filter(idempotency_key=idempotency_key).first()
        if existing is None or not idempotency_key:
            raise
        return _same_request(existing, kind, snapshot, normalized, idempotency_key)
    if enqueue:
        enqueue_run(run.pk)
    return run


def _refuse_before_lookup(
    kind: str, snapshot: models.ClusterSnapshot, request: Mapping[str, object], user: UserLike
) -> None:
    """Refuse a request on queues *user* does not administer before anything is looked
    up, so that an unknown queue or ask key and another tenant's answer the same 403."""
    partition = snapshot.partition
    if kind == models.PreemptionRun.Kind.WHATIF_QUOTA and isinstance(request.get("queue"), str):
        scoping.require_administer(user, partition, [str(request["queue"])])
    elif kind == models.PreemptionRun.Kind.ROUND:
        scoping.require_administer(user, partition, ["root"])
    elif kind == models.PreemptionRun.Kind.WHATIF_PREEMPT:
        key, ask = request.get("ask_key"), request.get("ask")
        if key:
            queue = snapshot.asks.filter(key=key).values_list("queue", flat=True).first()
            scoping.require_administer(user, partition, [queue or scoping.UNKNOWN_QUEUE])
        elif isinstance(ask, Mapping) and isinstance(ask.get("queue"), str):
            scoping.require_administer(user, partition, [str(ask["queue"])])


def _same_request(
    existing: models.PreemptionRun,
    kind: str,
    snapshot: models.ClusterSnapshot,
    normalized: object,
    key: str,
) -> models.PreemptionRun:
    """*existing* when it is the run of this very request, else an IdempotencyConflict."""

    def canonical(value: object) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    if (
        existing.kind == kind
        and existing.snapshot_id == snapshot.pk
        and canonical(existing.request) == canonical(json.loads(canonical(normalized)))
    ):
        return existing
    raise IdempotencyConflict(
        "idempotency_key",
        f"the idempotency key {key!r} was already used by run {existing.pk} for a different "
        "request; send a new key for a new request",
    )


def enqueue_run(run_id: int) -> None:
    """Send ``dashboard.execute_run`` for *run_id* after the current transaction commits."""
    send_task_on_commit("dashboard.execute_run", run_id)


_broker_prepared = threading.Event()


def prepare_broker_in_background() -> None:
    """Load the broker's transport (its client library) on a thread of its own, once
    per process, while the caller goes on with work that waits on the database.

    A process that sends its first task, such as ``manage.py import_snapshot``, would
    else load it after the commit, one step after the other (the embedded
    broker's SQLAlchemy is slower to load than Redis's client). Nothing is connected or sent here:
    the send itself stays after the commit. A worker has the transport loaded
    already, and this does nothing there after its first call.
    """
    if _broker_prepared.is_set():
        return
    _broker_prepared.set()

    def load() -> None:
        try:
            celery_app.connection_for_write().transport  # noqa: B018  # loads the class
        except Exception:  # the send reports an unreachable or misnamed broker itself
            logger.debug("broker transport not loaded ahead of the send", exc_info=True)

    threading.Thread(target=load, name="prepare-broker", daemon=True).start()


def send_task_on_commit(name: str, *args: object) -> None:
    """Send the task called *name* once the current transaction commits.

    Tasks are addressed by their stable name, so services never import the
    task module (tasks import services).  A broker that cannot be reached is
    logged, not raised: the rows are committed, and the sweep re-sends what is
    still pending.
    """

    def send() -> None:
        try:
            celery_app.signature(name, args=args).delay()
        except BrokerError as exc:
            logger.warning("%s%r stored but not sent (broker unreachable): %s", name, args, exc)

    transaction.on_commit(send)
