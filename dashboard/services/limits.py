"""Limits on input: upload sizes, resources as the scenario format defines them, delays."""

from __future__ import annotations

from collections.abc import Sized

from django.conf import settings

from dashboard.importers import quantities
from dashboard.importers.config import MAX_CONFIG_BYTES, TooManyConfigQueues
from dashboard.importers.snapshot.bounds import TooManyQueues as TooManyQueues
from dashboard.importers.snapshot.bounds import check_queue_count
from dashboard.names import name_problem
from dashboard.plumbing.errors import OverLimit, ServiceError, UploadTooLarge
from engine.durations import DurationSyntaxError, read_go_duration

Resource = dict[str, int]


def check_upload_size(
    name: str, size: int, limit: int | None = None, setting: str = "DASHBOARD_MAX_UPLOAD_BYTES"
) -> None:
    """Refuse an upload above *limit* (default: the configured upload limit), naming it."""
    if limit is None:
        limit = int(settings.DASHBOARD_MAX_UPLOAD_BYTES)
    if size > limit:
        raise UploadTooLarge(
            name, f"upload of {size} bytes is larger than the limit of {limit} bytes ({setting})"
        )


def check_config_size(name: str, size: int) -> None:
    """Refuse a config above the importer's limit at once (413), not in a job that fails."""
    limit = MAX_CONFIG_BYTES
    if size > limit:
        raise OverLimit(
            name,
            f"config of {size} bytes is larger than the config limit of {limit} bytes",
            limit,
            "MAX_CONFIG_BYTES",
        )


def check_names_given(**given: str | None) -> None:
    """Refuse a name given beside an upload (``partition=``, ``cluster=``) that breaks the
    one rule for names (:mod:`dashboard.names`), naming the field."""
    for kind, value in given.items():
        if value is not None and (problem := name_problem(kind, value)) is not None:
            raise ServiceError(kind, problem)


def snapshot_bounds(files: Sized, max_bytes: tuple[int, str] | None) -> dict[str, int]:
    """The bounds a snapshot parse reads within: an upload's queue limit
    (``DASHBOARD_MAX_SNAPSHOT_QUEUES``), or a poller's per-file byte bound times the files."""
    if max_bytes is None:
        return {"max_queues": int(settings.DASHBOARD_MAX_SNAPSHOT_QUEUES)}
    return {"max_bytes": max_bytes[0] * len(files)}


def check_snapshot_queues(doc: object) -> None:
    """Refuse a scenario posted as a JSON body with more queues than an upload may hold,
    before it is written out and parsed again (OverLimit, API: 413)."""
    try:
        check_queue_count("body", doc, int(settings.DASHBOARD_MAX_SNAPSHOT_QUEUES))
    except TooManyQueues as exc:
        raise too_many_queues(exc) from None


def config_queue_limit() -> int:
    """The most queues an uploaded config may hold: the snapshots' limit
    (``DASHBOARD_MAX_SNAPSHOT_QUEUES``), so nothing imported is larger than a snapshot
    the dashboard accepts."""
    return int(settings.DASHBOARD_MAX_SNAPSHOT_QUEUES)


def too_many_config_queues(exc: TooManyConfigQueues) -> OverLimit:
    """A config over the queue limit as the API's 413 (and the pages' 413)."""
    return OverLimit(
        exc.location or "file", exc.message, exc.limit, "DASHBOARD_MAX_SNAPSHOT_QUEUES"
    )


def too_many_queues(exc: TooManyQueues) -> OverLimit:
    return OverLimit(
        exc.location or "files", exc.message, exc.limit, "DASHBOARD_MAX_SNAPSHOT_QUEUES"
    )


MAX_QUANTITY = 2**63 - 1


def validate_resource(value: object, field: str, *, allow_none: bool = True) -> Resource | None:
    """A resource as the scenario format defines it: ``{type: int}``, 0 <= q <= 2**63-1."""
    if value is None:
        if allow_none:
            return None
        raise ServiceError(field, "is required")
    if not isinstance(value, dict):
        raise ServiceError(field, "must be an object mapping resource types to integers")
    out: Resource = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k:
            raise ServiceError(field, "resource type names must be non-empty strings")
        try:
            quantities.check_resource_type(k)
        except quantities.QuantityError as exc:
            raise ServiceError(field, str(exc)) from exc
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ServiceError(f"{field}.{k}", "must be an integer")
        if isinstance(v, float) and not v.is_integer():
            raise ServiceError(f"{field}.{k}", "must be an integer")
        q = int(v)
        if q < 0:
            raise ServiceError(f"{field}.{k}", "must not be negative")
        if q > MAX_QUANTITY:
            raise ServiceError(f"{field}.{k}", "is larger than 2**63-1")
        out[k] = q
    return out


def delay_seconds(text: str, field: str = "delay") -> float:
    """Seconds of a Go duration text (``5m``, ``1h30m``) as the scheduler reads it.

    Raises:
        ServiceError: naming *field* and why Go refuses the text.
    """
    try:
        return read_go_duration(text)
    except DurationSyntaxError as exc:
        raise ServiceError(field, str(exc)) from exc


#: The longest quota preemption delay (Go's ``time.Duration``, whole seconds).
MAX_DELAY_SECONDS = quantities.MAX_DELAY_SECONDS


def checked_delay(seconds: float, field: str = "delay") -> float:
    """A quota preemption delay within the one rule the API, the pages' forms and the
    config hand-back share (``quantities.check_delay_seconds``): finite, 0 or from 1ns
    to Go's longest duration, rounded to whole nanoseconds as the scheduler reads it.

    Raises:
        ServiceError: naming *field* and the rule.
    """
    try:
        return quantities.check_delay_seconds(seconds)
    except quantities.DelayRangeError as exc:
        raise ServiceError(field, str(exc)) from None
