"""The only module touching both ORM rows and the engine.

It owns the dashboard's write paths: importing configs and snapshots (one
transaction each; nothing stored on failure), building engine clusters from
stored snapshots, creating and executing preemption runs (claimed by a
conditional update, finished by another, so a redelivered task never records a
second run or a second set of victims), scheduling quota changes with the delay
timers of engine.md section 5, and the periodic sweep that fires due changes.

Time always comes in as an argument (``now``); callers that have none use
:func:`utcnow`, which tests replace by passing ``now`` explicitly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Field, JSONField, Max, Model, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from dashboard import charts, models
from dashboard.importers import quantities
from dashboard.importers.config import parse_config
from dashboard.importers.errors import ImportFailure
from dashboard.importers.export import export_config, export_configmap
from dashboard.importers.snapshot import SnapshotImport, parse_snapshot
from engine import explain, queues, timers
from engine import model as em
from engine.errors import ScenarioError
from engine.preemption import preempt, run_round
from engine.queues import build_snapshot
from engine.quota import plan_quota_change
from engine.scenario import cluster_to_dict, parse_scenario

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    UserLike = AbstractBaseUser | AnonymousUser | None

logger = logging.getLogger(__name__)

Resource = dict[str, int]
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The wall clock, timezone-aware (the default clock of every service)."""
    return timezone.now()


class ServiceError(Exception):
    """Bad input for a service: names the offending field (API: 400 ``{field: [message]}``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ImportRejected(ServiceError):
    """An import refused by the importers; ``field`` is the location (line, key or file)."""


class UploadTooLarge(ServiceError):
    """An upload above ``DASHBOARD_MAX_UPLOAD_BYTES`` (API: 413)."""


def _user(user: UserLike) -> Any:
    """The user to store on a row (``None`` for anonymous or missing users)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user


def _epoch(dt: datetime) -> float:
    return dt.timestamp()


def _from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def raise_alert(
    kind: str,
    message: str,
    *,
    level: str = models.Alert.Level.WARNING,
    partition: models.Partition | None = None,
    queue: str = "",
    run: models.PreemptionRun | None = None,
    change: models.QuotaChange | None = None,
    now: datetime | None = None,
) -> models.Alert:
    """Add one entry to the administrator alert feed."""
    return models.Alert.objects.create(
        level=level,
        kind=kind,
        message=message,
        partition=partition,
        queue=queue,
        run=run,
        change=change,
        created_at=now or utcnow(),
    )


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


# -- resources validation ---------------------------------------------------------

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


# -- snapshots: rows <-> engine clusters --------------------------------------------


def _validated_cluster(scenario: Mapping[str, object], field: str) -> em.Cluster:
    """Run the engine's own validation over a scenario's cluster part."""
    doc = dict(scenario)
    doc["request"] = {"type": "resources", "queue": "root"}
    try:
        return parse_scenario(doc, default_now=0.0).cluster
    except ScenarioError as exc:
        raise ImportRejected(f"{field}.{exc.field}" if exc.field else field, exc.message) from exc


def _validated_asks(
    scenario: Mapping[str, object], asks: Sequence[Mapping[str, object]], field: str
) -> tuple[em.Ask, ...]:
    doc = dict(scenario)
    doc["request"] = {"type": "round", "asks": [dict(a) for a in asks]}
    try:
        request = parse_scenario(doc, default_now=0.0).request
    except ScenarioError as exc:
        name = exc.field.replace("request.asks", "asks", 1)
        raise ImportRejected(f"{field}.{name}", exc.message) from exc
    assert isinstance(request, em.RoundRequest)
    return request.asks


def _digest(doc: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def scenario_checksum(scenario: Mapping[str, object]) -> str:
    """The checksum a snapshot of *scenario* is stored with (its validated cluster)."""
    doc = cluster_to_dict(_validated_cluster(scenario, "scenario"))
    if "now" in scenario:
        doc["now"] = scenario["now"]
    return _digest(doc)


def insert_rows(
    model: type[Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    batch: int = 2000,
) -> None:
    """INSERT plain value tuples into *model*'s table, in batches, without model instances.

    ``bulk_create`` spends ≈ 100 µs of Python per row building and compiling model
    instances; a snapshot of a 100,000-allocation cluster is that many rows. The SQL
    is built from the model's own table and column names, JSON values are adapted by
    their field as Django would (text on SQLite, jsonb on PostgreSQL), and a foreign
    key takes the related row's primary key. Must run inside the caller's transaction.
    """
    fields: list[Field[Any, Any]] = []
    for name in names:
        field = model._meta.get_field(name)
        if not isinstance(field, Field) or not field.column:
            raise TypeError(f"{model.__name__}.{name} is not a concrete column")
        fields.append(field)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"
    json_at = [i for i, f in enumerate(fields) if isinstance(f, JSONField)]
    pending: list[list[Any]] = []
    with connection.cursor() as cursor:
        for values in rows:
            out = list(values)
            for i in json_at:
                out[i] = fields[i].get_db_prep_save(out[i], connection)
            pending.append(out)
            if len(pending) >= batch:
                cursor.executemany(sql, pending)
                pending.clear()
        if pending:
            cursor.executemany(sql, pending)


def store_snapshot(
    *,
    partition_name: str,
    source_kind: str,
    captured_at: datetime,
    scenario: Mapping[str, object],
    asks: Sequence[Mapping[str, object]] = (),
    applications: Sequence[Mapping[str, object]] = (),
    queue_pending: Mapping[str, Mapping[str, int]] | None = None,
    warnings: Sequence[str] = (),
    user: UserLike = None,
    source_detail: str = "",
    alert_warnings: bool = True,
    now: datetime | None = None,
) -> models.ClusterSnapshot:
    """Validate a scenario (cluster part) with the engine and store it with its rows.

    Everything is written in one transaction; a validation error raises
    :class:`ImportRejected` before anything is stored.
    """
    now = now or utcnow()
    cluster = _validated_cluster(scenario, "scenario")
    parsed_asks = _validated_asks(scenario, asks, "scenario") if asks else ()
    snap = build_snapshot(cluster)
    doc = cluster_to_dict(cluster)
    if "now" in scenario:
        doc["now"] = scenario["now"]
    digest = _digest(doc)
    pending = queue_pending or {}
    with transaction.atomic():
        partition, _ = models.Partition.objects.get_or_create(
            name=partition_name,
            defaults={
                "quota_preemption_enabled": cluster.partition.quota_preemption_enabled,
                "miss": cluster.partition.miss,
            },
        )
        row = models.ClusterSnapshot.objects.create(
            partition=partition,
            source_kind=source_kind,
            source_detail=source_detail[:500],
            captured_at=captured_at,
            imported_at=now,
            imported_by=_user(user),
            scenario=doc,
            warnings=list(warnings),
            checksum=digest,
        )
        models.SnapshotQueue.objects.bulk_create(
            models.SnapshotQueue(
                snapshot=row,
                path=info.path,
                name=info.name,
                parent_path=info.parent or "",
                depth=info.depth,
                is_leaf=info.is_leaf,
                guaranteed=_own_limit(cluster, info.path, "guaranteed"),
                max=_own_limit(cluster, info.path, "max"),
                usage=dict(info.usage),
                preempting=dict(info.preempting),
                pending=dict(pending.get(info.path, {})),
                properties=dict(_queue_config(cluster, info.path).properties),
                quota_preemption_delay=_queue_config(cluster, info.path).quota_preemption_delay,
            )
            for info in snap
        )
        allocated: dict[str, dict[str, int]] = {}
        for a in cluster.allocations:
            node_sum = allocated.setdefault(a.node, {})
            for t, q in a.resources.items():
                node_sum[t] = node_sum.get(t, 0) + q
        models.SnapshotNode.objects.bulk_create(
            models.SnapshotNode(
                snapshot=row,
                node_id=n.id,
                capacity=dict(n.capacity),
                allocated=allocated.get(n.id, {}),
                schedulable=n.schedulable,
            )
            for n in cluster.nodes
        )
        insert_rows(
            models.SnapshotAllocation,
            (
                "snapshot",
                "key",
                "app",
                "queue",
                "node",
                "resources",
                "priority",
                "originator",
                "allow_preemption",
                "required_node",
                "preempted",
                "created",
            ),
            (
                (
                    row.pk,
                    a.key,
                    a.app,
                    a.queue,
                    a.node,
                    dict(a.resources),
                    a.priority,
                    a.originator,
                    a.allow_preemption,
                    a.required_node,
                    a.preempted,
                    a.created,
                )
                for a in cluster.allocations
            ),
        )
        models.PendingAsk.objects.bulk_create(
            models.PendingAsk(
                snapshot=row,
                key=a.key,
                app=a.app,
                queue=a.queue,
                resources=dict(a.resources),
                priority=a.priority,
                allow_preempt_other=a.allow_preempt_other,
                created=a.created,
            )
            for a in parsed_asks
        )
        seen_apps: set[str] = set()
        app_rows = []
        for app in applications:
            app_id = str(app.get("app_id") or app.get("id") or "")
            if not app_id or app_id in seen_apps:
                continue
            seen_apps.add(app_id)
            app_rows.append(
                models.SnapshotApplication(
                    snapshot=row,
                    app_id=app_id,
                    queue=str(app.get("queue") or ""),
                    state=str(app.get("state") or ""),
                    used=_plain_resource(app.get("used")),
                    pending=_plain_resource(app.get("pending")),
                    details={k: v for k, v in app.items() if _is_json(v)},
                )
            )
        models.SnapshotApplication.objects.bulk_create(app_rows)
        for w in warnings if alert_warnings else ():
            raise_alert(
                models.Alert.Kind.IMPORT_WARNING,
                f"snapshot {row.pk}: {w}",
                level=models.Alert.Level.INFO,
                partition=partition,
                now=now,
            )
        start_usage_timers(partition, row, now=now)
    return row


def _is_json(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _plain_resource(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): int(v) for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)
    }


def _queue_config(cluster: em.Cluster, path: str) -> em.QueueConfig:
    node = cluster.root
    for name in path.split(".")[1:]:
        node = next(c for c in node.children if c.name == name)
    return node


def _own_limit(
    cluster: em.Cluster, path: str, which: Literal["guaranteed", "max"]
) -> Resource | None:
    q = _queue_config(cluster, path)
    value = q.guaranteed if which == "guaranteed" else q.max
    return None if value is None else dict(value)


def cluster_from_snapshot(
    snapshot: models.ClusterSnapshot,
    *,
    partition: em.Partition | None = None,
    preempted: Iterable[str] = (),
) -> em.Cluster:
    """Build the engine's Cluster from a stored snapshot's rows (no JSON round trip).

    Args:
        snapshot: the stored snapshot.
        partition: partition settings to use instead of the snapshot's own.
        preempted: allocation keys to treat as already preempted (victims of
            quota enforcement runs recorded since the snapshot was taken).
    """
    # tuples, not model instances: a large snapshot has tens of thousands of rows
    queues = list(
        snapshot.queues.order_by("path").values_list(
            "path",
            "name",
            "parent_path",
            "guaranteed",
            "max",
            "properties",
            "quota_preemption_delay",
        )
    )
    if not queues:
        raise ServiceError("snapshot", f"snapshot {snapshot.pk} has no queues")
    children: dict[str, list[em.QueueConfig]] = {}
    built: dict[str, em.QueueConfig] = {}
    # reverse path order visits children before their parent
    for path, name, parent_path, guaranteed, max_, properties, delay in reversed(queues):
        kids = tuple(sorted(children.get(path, ()), key=lambda c: c.name))
        cfg = em.QueueConfig(
            name=name,
            guaranteed=guaranteed,
            max=max_,
            properties=dict(properties or {}),
            quota_preemption_delay=delay,
            children=kids,
        )
        built[path] = cfg
        if parent_path:
            children.setdefault(parent_path, []).append(cfg)
    root = built["root"]
    extra = set(preempted)
    nodes = tuple(
        em.Node(id=node_id, capacity=dict(capacity), schedulable=schedulable)
        for node_id, capacity, schedulable in snapshot.nodes.order_by("node_id").values_list(
            "node_id", "capacity", "schedulable"
        )
    )
    rows = snapshot.allocations.order_by("key").values_list(
        "key",
        "queue",
        "node",
        "resources",
        "app",
        "priority",
        "originator",
        "allow_preemption",
        "created",
        "required_node",
        "preempted",
    )
    allocations = tuple(
        em.Allocation(
            key=key,
            queue=queue,
            node=node,
            resources=dict(resources),
            app=app,
            priority=priority,
            originator=originator,
            allow_preemption=allow,
            created=created,
            required_node=required,
            preempted=was_preempted or key in extra,
        )
        for (
            key,
            queue,
            node,
            resources,
            app,
            priority,
            originator,
            allow,
            created,
            required,
            was_preempted,
        ) in rows.iterator(chunk_size=5000)
    )
    if partition is None:
        partition = snapshot_partition(snapshot)
    return em.Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)


def snapshot_partition(snapshot: models.ClusterSnapshot) -> em.Partition:
    """The partition settings stored with a snapshot (without loading its whole scenario)."""
    if "scenario" in snapshot.__dict__:  # already loaded: free
        raw: object = snapshot.scenario.get("partition")
    else:
        raw = (
            models.ClusterSnapshot.objects.filter(pk=snapshot.pk)
            .values_list("scenario__partition", flat=True)
            .first()
        )
    settings_ = raw if isinstance(raw, dict) else {}
    return em.Partition(
        quota_preemption_enabled=bool(settings_.get("quota_preemption_enabled", False)),
        miss=float(settings_.get("miss", 0.0)),
    )


def ask_from_row(row: models.PendingAsk) -> em.Ask:
    return em.Ask(
        key=row.key,
        queue=row.queue,
        resources=dict(row.resources),
        app=row.app,
        priority=row.priority,
        allow_preempt_other=row.allow_preempt_other,
        created=row.created,
    )


def snapshot_now(snapshot: models.ClusterSnapshot) -> float:
    """The engine's ``now`` for a snapshot: its own ``now`` or its capture time."""
    raw = snapshot.scenario.get("now")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    return _epoch(snapshot.captured_at)


def scenario_document(
    snapshot: models.ClusterSnapshot, request: Mapping[str, object] | None = None
) -> dict[str, object]:
    """A scenario JSON for ``python -m engine``: the stored cluster plus *request*."""
    doc = cluster_to_dict(cluster_from_snapshot(snapshot))
    doc["now"] = snapshot_now(snapshot)
    if request is not None:
        doc["request"] = dict(request)
    return doc


# -- imports ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigImportResult:
    versions: tuple[models.ConfigVersion, ...]
    changes: tuple[models.QuotaChange, ...]


def _rejected(
    exc: ImportFailure, default_location: str, what: str, now: datetime | None
) -> ImportRejected:
    """Record a failed import in the alert feed and turn it into a service error."""
    location = exc.location or default_location
    raise_alert(
        models.Alert.Kind.IMPORT_FAILED,
        f"{what} refused: {location}: {exc.message}",
        level=models.Alert.Level.ERROR,
        now=now,
    )
    return ImportRejected(location, exc.message)


def import_config(
    data: bytes,
    *,
    filename: str = "queues.yaml",
    user: UserLike = None,
    partition: str | None = None,
    now: datetime | None = None,
) -> ConfigImportResult:
    """Import a queue config (queues.yaml or ConfigMap): one version per partition.

    Every queue whose max or quota delay differs from what was in force gets a
    scheduled quota change (its timer starts now, as when a ConfigMap is saved).
    Nothing is stored when the importer refuses the file; the refusal is
    recorded in the alert feed.

    Raises:
        ImportRejected: naming the line or key; UploadTooLarge.
    """
    now = now or utcnow()
    check_upload_size(filename, len(data))
    try:
        parsed = parse_config(data, filename=filename)
    except ImportFailure as exc:
        raise _rejected(exc, filename, f"config {filename}", now) from exc
    parts = [p for p in parsed.partitions if partition is None or p.name == partition]
    if not parts:
        names = ", ".join(p.name for p in parsed.partitions)
        raise ImportRejected("partition", f"{filename} has no partition {partition!r} ({names})")
    versions: list[models.ConfigVersion] = []
    changes: list[models.QuotaChange] = []
    with transaction.atomic():
        for spec in parts:
            row, _ = models.Partition.objects.select_for_update().get_or_create(name=spec.name)
            previous = latest_config(row)
            new_queues = {q.path: q for q in spec.queues()}
            # what is in force before this import: the old config plus later changes
            baseline = (
                {path: queue_settings(row, path) for path in new_queues}
                if previous is not None
                else {}
            )
            row.quota_preemption_enabled = spec.quota_preemption_enabled
            row.save(update_fields=["quota_preemption_enabled"])
            version = models.ConfigVersion.objects.create(
                partition=row,
                number=_next_config_number(row),
                filename=filename[:255],
                text=parsed.text,
                checksum=parsed.checksum,
                quota_preemption_enabled=spec.quota_preemption_enabled,
                warnings=list(parsed.warnings),
                parsed={
                    **spec.to_dict(),
                    "source_format": parsed.source_format,
                    "extra": dict(parsed.extra),
                },
                imported_by=_user(user),
                imported_at=now,
            )
            by_path: dict[str, models.ConfigQueue] = {}
            for q in spec.queues():  # parents first
                parent_path = q.path.rpartition(".")[0]
                by_path[q.path] = models.ConfigQueue.objects.create(
                    version=version,
                    path=q.path,
                    name=q.name,
                    parent=by_path.get(parent_path),
                    depth=q.path.count("."),
                    guaranteed=q.guaranteed,
                    max=q.max,
                    properties=dict(q.properties),
                    quota_preemption_delay=q.quota_preemption_delay,
                    is_leaf=q.is_leaf,
                    is_parent_flag=bool(q.parent),
                )
            for w in parsed.warnings:
                raise_alert(
                    models.Alert.Kind.IMPORT_WARNING,
                    f"config v{version.number} of {spec.name} ({filename}): {w}",
                    partition=row,
                    now=now,
                )
            for path, q in sorted(new_queues.items(), key=lambda e: (-e[0].count("."), e[0])):
                before = baseline.get(path)
                if before is None or not before.is_known:
                    continue
                if before.max == q.max and before.delay == q.quota_preemption_delay:
                    continue
                changes.append(
                    _schedule_once(
                        row,
                        path,
                        q.max,
                        q.quota_preemption_delay,
                        user,
                        None,
                        version,
                        now,
                        baseline=before,
                    )
                )
            versions.append(version)
    return ConfigImportResult(tuple(versions), tuple(changes))


def _next_config_number(partition: models.Partition) -> int:
    """Versions are numbered in import order, planned ones included."""
    highest = partition.configs.aggregate(n=Max("number"))["n"]
    return (highest or 0) + 1


def config_diff(
    version: models.ConfigVersion, other: models.ConfigVersion | None = None
) -> list[dict[str, Any]]:
    """Changes from *other* (default: the previous version) to *version*, as dicts."""
    if other is None:
        other = (
            models.ConfigVersion.objects.filter(
                partition=version.partition, number__lt=version.number, planned=False
            )
            .order_by("-number")
            .first()
        )
    if other is None:
        return []
    try:
        old = parse_config(other.text, filename=other.filename or "queues.yaml")
        new = parse_config(version.text, filename=version.filename or "queues.yaml")
    except ImportFailure as exc:  # stored texts were accepted once; a parser change can refuse
        raise ServiceError("other", f"cannot re-read a stored config: {exc}") from exc
    wanted = {version.partition.name, other.partition.name}
    return [c.to_dict() for c in old.diff(new) if c.partition in wanted]


def import_snapshot(
    files: Mapping[str, bytes],
    *,
    user: UserLike = None,
    partition: str | None = None,
    source_partition: str | None = None,
    alert_warnings: bool = True,
    now: datetime | None = None,
    parsed: SnapshotImport | None = None,
    max_bytes: tuple[int, str] | None = None,
) -> models.ClusterSnapshot:
    """Import a snapshot from a scenario JSON, YuniKorn REST files or a full state dump.

    Args:
        files: file name -> content.
        user: who imports.
        partition: store the snapshot under this partition name.
        source_partition: the partition to read from a multi-partition state dump.
        alert_warnings: raise an info alert per importer warning (a poller that
            stores a snapshot every few seconds passes False; the warnings stay
            on the snapshot row).
        parsed: ``parse_snapshot(files, partition=source_partition)`` when the caller
            has already parsed them (the poller, which fingerprints the parse first).
        max_bytes: the largest file accepted and the setting that holds it (the
            poller's ``SOURCES_MAX_ANSWER_BYTES``); default ``DASHBOARD_MAX_UPLOAD_BYTES``.

    Raises:
        ImportRejected: naming the file and key; UploadTooLarge.
    """
    now = now or utcnow()
    names = ", ".join(sorted(files)) or "(no file)"
    for name, data in files.items():
        if max_bytes is None:
            check_upload_size(name, len(data))
        else:
            check_upload_size(name, len(data), *max_bytes)
    if parsed is None:
        try:
            parsed = parse_snapshot(files, partition=source_partition)
        except ImportFailure as exc:
            raise _rejected(exc, names, f"snapshot {names}", now) from exc
    captured = as_datetime(parsed.captured_at) or now
    try:
        return store_snapshot(
            partition_name=partition or parsed.partition or "default",
            source_kind=_source_kind(parsed.kind),
            captured_at=captured,
            scenario=parsed.scenario,
            asks=list(parsed.asks),
            applications=list(parsed.applications),
            queue_pending=_pending_by_queue(parsed.queue_usage),
            warnings=list(parsed.warnings),
            user=user,
            source_detail=f"{parsed.kind}: {names}",
            alert_warnings=alert_warnings,
            now=now,
        )
    except ImportRejected as exc:
        raise _rejected(
            ImportFailure(exc.message, exc.field), names, f"snapshot {names}", now
        ) from exc


def as_datetime(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _from_epoch(float(value))
    return None


def _source_kind(kind: str) -> str:
    if kind == "scenario":
        return models.ClusterSnapshot.Source.SCENARIO
    if "dump" in kind:
        return models.ClusterSnapshot.Source.STATE_DUMP
    return models.ClusterSnapshot.Source.REST


def _pending_by_queue(queue_usage: object) -> dict[str, dict[str, int]]:
    """Per-queue pending resources out of the importer's queue figures."""
    out: dict[str, dict[str, int]] = {}
    if not isinstance(queue_usage, Mapping):
        return out
    for path, figures in queue_usage.items():
        if isinstance(figures, Mapping):
            out[str(path)] = _plain_resource(figures.get("pending"))
    return out


def export_request(
    snapshot: models.ClusterSnapshot, *, ask: str | None = None, quota: str | None = None
) -> dict[str, object]:
    """The request part of an exported scenario: ``--ask KEY`` or ``--quota QUEUE=MAX``.

    Without either, a ``resources`` request for root (any engine request needs one).
    """
    if ask and quota:
        raise ServiceError("ask", "give either ask or quota, not both")
    if ask:
        row = snapshot.asks.filter(key=ask).first()
        if row is None:
            raise ServiceError("ask", f"no pending ask {ask!r} in snapshot {snapshot.pk}")
        return {
            "type": "preempt",
            "ask": {
                "key": row.key,
                "app": row.app,
                "queue": row.queue,
                "resources": dict(row.resources),
                "priority": row.priority,
                "allow_preempt_other": row.allow_preempt_other,
                "created": row.created,
            },
        }
    if quota:
        queue, sep, raw = quota.partition("=")
        if not sep:
            raise ServiceError("quota", 'use QUEUE=JSON, e.g. root.a={"vcore": 8000}')
        try:
            new_max = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as exc:
            raise ServiceError("quota", f"the new max is not JSON: {exc.msg}") from exc
        new_max = validate_resource(new_max, "quota")
        if not snapshot.queues.filter(path=queue).exists():
            raise ServiceError("quota", f"unknown queue {queue!r} in snapshot {snapshot.pk}")
        return {"type": "quota_change", "queue": queue, "new_max": new_max}
    return {"type": "resources", "queue": "root"}


def export_config_yaml(version: models.ConfigVersion, *, configmap: bool = False) -> str:
    """The config of *version* as YuniKorn YAML (queues.yaml or a ConfigMap).

    For the partition's latest version, the max of every queue changed through
    the dashboard since the import is written in (comments and order kept).
    """
    try:
        parsed = parse_config(version.text, filename=version.filename or "queues.yaml")
        overrides: dict[str, Mapping[str, int] | None] = {}
        latest = latest_config(version.partition)
        if latest is not None and latest.pk == version.pk:
            changed = (
                models.QuotaChange.objects.filter(
                    partition=version.partition, changed_at__gte=version.imported_at
                )
                .exclude(
                    state__in=[models.QuotaChange.State.CANCELLED, models.QuotaChange.State.PENDING]
                )
                .values_list("queue_path", flat=True)
                .distinct()
            )
            for path in changed:
                now_in_force = queue_settings(version.partition, path)
                row = version.queues.filter(path=path).first()
                if row is not None and now_in_force.max != row.max:
                    overrides[path] = now_in_force.max
        name = version.partition.name
        if configmap:
            return export_configmap(parsed, overrides=overrides, partition=name)
        return export_config(parsed, overrides=overrides, partition=name)
    except ImportFailure as exc:
        raise ServiceError(exc.location or "config", exc.message) from exc


def acknowledge_alert(
    alert: models.Alert, *, user: UserLike = None, now: datetime | None = None
) -> models.Alert:
    """Mark one alert read (idempotent: the first acknowledgement is kept)."""
    models.Alert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True).update(
        acknowledged_at=now or utcnow(), acknowledged_by=_user(user)
    )
    alert.refresh_from_db()
    return alert


def acknowledge_all_alerts(*, user: UserLike = None, now: datetime | None = None) -> int:
    return models.Alert.objects.filter(acknowledged_at__isnull=True).update(
        acknowledged_at=now or utcnow(), acknowledged_by=_user(user)
    )


# -- preemption runs ------------------------------------------------------------------


class _RunAnswer(TypedDict):
    result: dict[str, object]
    outcome: str
    claimed: dict[str, int] | None
    target: dict[str, int] | None
    alerts: list[str]
    victims: list[dict[str, object]]


def _typed_ask(raw: object, snapshot: models.ClusterSnapshot) -> em.Ask:
    """Validate a typed ask against the snapshot's queue tree (engine validation)."""
    if not isinstance(raw, Mapping):
        raise ServiceError("ask", "must be an object")
    doc: dict[str, object] = {
        "queues": snapshot.scenario.get("queues"),
        "request": {"type": "preempt", "ask": dict(raw)},
    }
    try:
        request = parse_scenario(doc, default_now=0.0).request
    except ScenarioError as exc:
        raise ServiceError(exc.field.replace("request.", "", 1), exc.message) from exc
    assert isinstance(request, em.PreemptRequest)
    return request.ask


def _leaf_queue(snapshot: models.ClusterSnapshot, queue: object, field: str) -> str:
    if not isinstance(queue, str) or not queue:
        raise ServiceError(field, "is required")
    if not snapshot.queues.filter(path=queue).exists():
        raise ServiceError(field, f"unknown queue {queue!r} in snapshot {snapshot.pk}")
    return queue


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
        ask = _typed_ask(request.get("ask"), snapshot)
        return {"ask": dict(request["ask"])}, ask.queue  # type: ignore[call-overload]  # checked by _typed_ask
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

    The same ``idempotency_key`` twice returns the first run (no second run).
    """
    now = now or utcnow()
    if idempotency_key:
        existing = models.PreemptionRun.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing
    normalized, queue = validate_run_request(kind, snapshot, request)
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
                created_by=_user(user),
                queued_at=now,
            )
    except IntegrityError:
        existing = models.PreemptionRun.objects.filter(idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return existing
    if enqueue:
        enqueue_run(run.pk)
    return run


def enqueue_run(run_id: int) -> None:
    """Send ``dashboard.execute_run`` for *run_id* after the current transaction commits."""
    # tasks import services, so the task module is looked up late
    from dashboard.tasks import execute_run as execute_run_task

    def send() -> None:
        try:
            execute_run_task.delay(run_id)
        except BrokerError as exc:
            # the run is committed as pending: the sweep re-sends it (_recover_stale_runs)
            logger.warning("run %s stored but not sent (broker unreachable): %s", run_id, exc)

    transaction.on_commit(send)


def _victim_rows(
    snapshot: models.ClusterSnapshot,
    keys: Sequence[tuple[str, str, str]],
) -> list[dict[str, object]]:
    """Victim details (queue, node, resources) for (allocation key, ask, leaf) triples."""
    rows = {
        a.key: a
        for a in snapshot.allocations.filter(key__in=[k for k, _, _ in keys]).only(
            "key", "app", "queue", "node", "resources"
        )
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
                "app": a.app if a else "",
                "queue": a.queue if a else leaf,
                "leaf": leaf or (a.queue if a else ""),
                "node": a.node if a else "",
                "resources": dict(a.resources) if a else {},
            }
        )
    return out


def _enforced_victims(snapshot: models.ClusterSnapshot) -> list[str]:
    """Allocations already taken by quota enforcement runs evaluated on *snapshot*."""
    return list(
        models.RunVictim.objects.filter(
            run__snapshot=snapshot,
            run__kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
            run__status=models.PreemptionRun.Status.DONE,
        ).values_list("allocation_key", flat=True)
    )


def _compute(run: models.PreemptionRun) -> _RunAnswer:
    """Call the engine for *run* (no writes)."""
    snapshot = run.snapshot
    if snapshot is None:
        raise ServiceError("snapshot", "the run's snapshot was deleted")
    now = snapshot_now(snapshot)
    req = run.request
    kind = run.kind
    if kind == models.PreemptionRun.Kind.WHATIF_PREEMPT:
        cluster = cluster_from_snapshot(snapshot)
        if req.get("ask_key"):
            ask = ask_from_row(snapshot.asks.get(key=req["ask_key"]))
        else:
            ask = _typed_ask(req.get("ask"), snapshot)
        pa = preempt(cluster, ask, now)
        return {
            "result": pa.to_dict(),
            "outcome": pa.status,
            "claimed": None,
            "target": None,
            "alerts": [pa.reason] if pa.reason else [],
            "victims": _victim_rows(snapshot, [(k, ask.key, "") for k in pa.victims]),
        }
    if kind == models.PreemptionRun.Kind.ROUND:
        cluster = cluster_from_snapshot(snapshot)
        by_key = {a.key: a for a in snapshot.asks.all()}
        asks = tuple(ask_from_row(by_key[k]) for k in req.get("ask_keys", []) if k in by_key)
        ra = run_round(cluster, asks, req.get("max_preempted"), now)
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
            "alerts": [f"{r.ask}: {r.reason}" for r in ra.results if r.reason],
            "victims": _victim_rows(
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
            preempted=_enforced_victims(snapshot) if enforcing else (),
        )
        running = frozenset(
            models.QuotaChange.objects.filter(
                partition=run.partition, state=models.QuotaChange.State.RUNNING
            )
            .exclude(queue_path=run.queue)
            .values_list("queue_path", flat=True)
        )
        qa = plan_quota_change(
            cluster,
            str(req["queue"]),
            req.get("new_max"),
            _epoch(run.started_at) if enforcing and run.started_at else now,
            running=running if enforcing else frozenset(),
        )
        answer = qa.to_dict()
        leaf_of = {k: leaf for leaf, plan in qa.leaves.items() for k in plan.victims}
        return {
            "result": answer,
            "outcome": qa.status,
            "claimed": dict(qa.claimed),
            "target": dict(qa.preemptable),
            "alerts": list(qa.alerts),
            "victims": _victim_rows(snapshot, [(k, "", leaf_of.get(k, "")) for k in qa.victims]),
        }
    raise ServiceError("kind", f"unknown run kind {kind!r}")


def _claim_run(run_id: int, now: datetime) -> models.PreemptionRun | None:
    """Claim a run: pending -> running, or take over a running one whose lease expired."""
    lease = now + timedelta(seconds=settings.DASHBOARD_RUN_LEASE_SECONDS)
    claim = {
        "status": models.PreemptionRun.Status.RUNNING,
        "attempts": F("attempts") + 1,
        "lease_until": lease,
        "started_at": now,
    }
    expired = Q(status=models.PreemptionRun.Status.RUNNING, lease_until__lt=now)
    try:
        with transaction.atomic():
            taken = (
                models.PreemptionRun.objects.filter(pk=run_id)
                .filter(status=models.PreemptionRun.Status.PENDING)
                .update(**claim)
            )
            took_over = False
            if not taken:
                previous = (
                    models.PreemptionRun.objects.filter(pk=run_id)
                    .filter(expired)
                    .values_list("lease_until", flat=True)
                    .first()
                )
                taken = (
                    models.PreemptionRun.objects.filter(pk=run_id).filter(expired).update(**claim)
                )
                took_over = bool(taken)
            if took_over:
                run = models.PreemptionRun.objects.select_related("partition").get(pk=run_id)
                raise_alert(
                    models.Alert.Kind.ENGINE,
                    f"run {run.pk} ({run.kind}{', ' + run.queue if run.queue else ''}) was taken "
                    f"over after its worker stopped (lease expired at "
                    f"{previous.isoformat() if previous else '-'}); attempt {run.attempts}",
                    partition=run.partition,
                    queue=run.queue,
                    run=run,
                    now=now,
                )
    except IntegrityError:
        # another quota preemption already runs for this queue: leave it pending
        logger.info("run %s not claimed: a quota preemption runs for its queue", run_id)
        return None
    if not taken:
        return None
    return models.PreemptionRun.objects.select_related("snapshot", "partition").get(pk=run_id)


def execute_run(run_id: int, *, now: datetime | None = None) -> None:
    """Claim, evaluate and store one run; running it twice is harmless.

    A run that is done, or claimed by a live worker (lease not expired), is left
    alone.  The result, victims and alerts are written by one conditional update
    that only succeeds for the claim that computed them, so a redelivered or
    taken-over task never records a second answer or a second set of victims.
    """
    clock_now = now or utcnow()
    run = _claim_run(run_id, clock_now)
    if run is None:
        return
    attempt = run.attempts
    delay = settings.DASHBOARD_TEST_TASK_DELAY
    if delay > 0:  # test-only hook: lets an integration test kill the worker mid-task
        logger.warning("DASHBOARD_TEST_TASK_DELAY: run %s sleeps %.1fs", run_id, delay)
        time.sleep(delay)
    enforcing = run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT
    error = ""
    unexpected: Exception | None = None
    # Quota plans of one partition count each other's victims as gone: they run one at
    # a time (partition row lock) so two of them never pick the same allocation.
    with transaction.atomic() if enforcing else contextlib.nullcontext():
        if enforcing:
            list(
                models.Partition.objects.select_for_update()
                .filter(pk=run.partition_id)
                .values_list("pk", flat=True)
            )
        started = time.perf_counter()
        try:
            answer = _compute(run)
        except (ServiceError, ScenarioError, models.PendingAsk.DoesNotExist) as exc:
            error = str(exc)
        except Exception as exc:
            error, unexpected = f"{type(exc).__name__}: {exc}", exc
        else:
            engine_ms = (time.perf_counter() - started) * 1000.0
            _finish_run(run, attempt, answer, engine_ms, now=now)
    if error:
        _fail_run(run, attempt, error, now=now)
    if unexpected is not None:
        raise unexpected


def _finish_run(
    run: models.PreemptionRun,
    attempt: int,
    answer: _RunAnswer,
    engine_ms: float,
    *,
    now: datetime | None,
) -> bool:
    finished = now or utcnow()
    with transaction.atomic():
        won = models.PreemptionRun.objects.filter(
            pk=run.pk, status=models.PreemptionRun.Status.RUNNING, attempts=attempt
        ).update(
            status=models.PreemptionRun.Status.DONE,
            result=answer["result"],
            outcome=answer["outcome"],
            claimed=answer["claimed"],
            target=answer["target"],
            alerts=answer["alerts"],
            finished_at=finished,
            engine_ms=engine_ms,
            lease_until=None,
            error="",
        )
        if not won:
            transaction.set_rollback(True)
            return False
        models.RunVictim.objects.bulk_create(
            models.RunVictim(
                run=run,
                position=i,
                allocation_key=str(v["allocation_key"]),
                ask=str(v["ask"]),
                app=str(v["app"]),
                queue=str(v["queue"]),
                leaf=str(v["leaf"]),
                node=str(v["node"]),
                resources=v["resources"],
            )
            for i, v in enumerate(answer["victims"])
        )
        if run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            level = (
                models.Alert.Level.WARNING
                if answer["outcome"] in ("best_effort", "does_not_help")
                else models.Alert.Level.INFO
            )
            for text in answer["alerts"]:
                raise_alert(
                    models.Alert.Kind.QUOTA,
                    text,
                    level=level,
                    partition=run.partition,
                    queue=run.queue,
                    run=run,
                    now=finished,
                )
            change = _complete_change(run, answer, finished)
            victims = answer["victims"]
            raise_alert(
                models.Alert.Kind.QUOTA,
                f"{run.queue}: quota change {change.pk if change else '-'} fired: "
                f"{answer['outcome']}, {len(victims)} victim{'s' if len(victims) != 1 else ''}"
                + (
                    f" ({', '.join(str(v['allocation_key']) for v in victims[:10])}"
                    f"{', ...' if len(victims) > 10 else ''})"
                    if victims
                    else ""
                )
                + f"; claimed {_resource_text(answer['claimed'])} of "
                f"{_resource_text(answer['target'])}",
                level=level,
                partition=run.partition,
                queue=run.queue,
                run=run,
                change=change,
                now=finished,
            )
    return True


def _fail_run(run: models.PreemptionRun, attempt: int, error: str, *, now: datetime | None) -> None:
    finished = now or utcnow()
    with transaction.atomic():
        won = models.PreemptionRun.objects.filter(
            pk=run.pk, status=models.PreemptionRun.Status.RUNNING, attempts=attempt
        ).update(
            status=models.PreemptionRun.Status.FAILED,
            error=error[:5000],
            finished_at=finished,
            lease_until=None,
        )
        if not won:
            return
        raise_alert(
            models.Alert.Kind.RUN_FAILED,
            f"run {run.pk} ({run.kind}) failed: {error}",
            level=models.Alert.Level.ERROR,
            partition=run.partition,
            queue=run.queue,
            run=run,
            now=finished,
        )
        if run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            models.QuotaChange.objects.filter(
                run=run, state=models.QuotaChange.State.RUNNING
            ).update(
                state=models.QuotaChange.State.FAILED,
                finished_at=finished,
                reason=f"quota enforcement failed: {error}"[:2000],
            )


# -- quota changes and their delay timers ---------------------------------------------

_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """What a queue is configured with right now (config, then later changes)."""

    max: Resource | None
    delay: float
    is_known: bool
    is_dynamic: bool
    depth: int


@dataclass(frozen=True, slots=True)
class ChangeDecision:
    """Where a newly saved change goes, and what happens to the queue's active one."""

    state: str
    deadline: datetime | None
    reason: str
    previous: str | None
    """New state of the queue's waiting change (``reset``/``cancelled_by_increase``), if any."""
    action: str
    """The ``engine.timers`` action behind the decision."""


def exceeds(usage: Mapping[str, int] | None, limit: Mapping[str, int] | None) -> bool:
    """Usage above *limit* in some type of the limit (undefined max types are unlimited)."""
    return timers.exceeds_max(usage, limit)


def _timer_state(change: models.QuotaChange | None) -> timers.TimerState:
    """The engine timer state a queue's active change row stands for."""
    if change is None:
        return timers.TimerState.idle()
    if change.state == models.QuotaChange.State.RUNNING:
        started = change.started_at or change.changed_at
        return timers.TimerState.running(_epoch(started), change.new_max)
    if change.state == models.QuotaChange.State.WAITING and change.deadline is not None:
        return timers.TimerState.waiting(_epoch(change.deadline))
    return timers.TimerState.idle()


def _above(limit: Mapping[str, int] | None) -> dict[str, int]:
    return {t: q + 1 for t, q in (limit or {}).items()}


def decide_change(
    *,
    active: models.QuotaChange | None,
    quota_preemption_enabled: bool,
    old_delay: float,
    delay: float,
    old_max: Mapping[str, int] | None,
    new_max: Mapping[str, int] | None,
    usage: Mapping[str, int] | None,
    is_dynamic: bool,
    queue: str,
    now: datetime,
) -> ChangeDecision:
    """The timer rules of engine.md section 5 (``engine.timers``) for one saved change.

    The timer starts when the change is saved; a further change of the max or the
    delay resets it from that moment; a purely looser max cancels a waiting
    decrease; a change arriving while a quota preemption runs is skipped; with the
    partition flag off or a zero delay no timer starts, and the reason says so.
    """
    state = _timer_state(active)
    event = timers.ConfigChanged(
        old_max=old_max,
        old_delay=old_delay,
        max=new_max,
        # unknown usage (no snapshot yet): assume the max is exceeded; the tick re-checks
        usage=usage if usage is not None else _above(new_max),
        delay=delay,
        enabled=quota_preemption_enabled,
        dynamic=is_dynamic,
    )
    step = timers.timer_step(state, event, _epoch(now))
    was_waiting = state.is_waiting
    states = models.QuotaChange.State
    if step.action == "skipped_running":
        return ChangeDecision(
            states.SKIPPED,
            None,
            f"a quota preemption is running for {queue}: this change is recorded and "
            "skipped; it is re-checked when the running preemption finishes",
            None,
            step.action,
        )
    if step.state.is_waiting and step.state.deadline is not None:
        deadline = _from_epoch(step.state.deadline)
        verb = "timer reset from the change time" if was_waiting else "timer started"
        return ChangeDecision(
            states.WAITING,
            deadline,
            f"{verb}: usage exceeds the new max, quota preemption fires at "
            f"{deadline.isoformat()} (delay {delay:g}s)",
            states.RESET if was_waiting else None,
            step.action,
        )
    previous: str | None = None
    if was_waiting:
        previous = (
            states.CANCELLED_BY_INCREASE if step.action == "cancelled_by_increase" else states.RESET
        )
    return ChangeDecision(states.DONE, None, f"no timer: {step.note}", previous, step.action)


def latest_snapshot(partition: models.Partition) -> models.ClusterSnapshot | None:
    return partition.snapshots.order_by("-captured_at", "-id").first()


def latest_config(partition: models.Partition) -> models.ConfigVersion | None:
    """The config in force: the newest imported version (a planned one never is)."""
    return partition.configs.filter(planned=False).order_by("-number").first()


def _snapshot_queue_settings(
    snapshot: models.ClusterSnapshot, queue_path: str
) -> QueueSettings | None:
    rows = {
        q.path: q
        for q in snapshot.queues.filter(
            path__in=[
                ".".join(queue_path.split(".")[:i]) for i in range(1, queue_path.count(".") + 2)
            ]
        )
    }
    row = rows.get(queue_path)
    if row is None:
        return None
    delay = 0.0
    for i in range(queue_path.count(".") + 1, 0, -1):  # own value, else the nearest ancestor's
        q = rows.get(".".join(queue_path.split(".")[:i]))
        if q is not None and q.quota_preemption_delay is not None:
            delay = q.quota_preemption_delay
            break
    return QueueSettings(row.max, delay, True, False, row.depth)


def queue_settings(partition: models.Partition, queue_path: str) -> QueueSettings:
    """The queue's max and effective delay now: its config, then later changes to it."""
    config = latest_config(partition)
    base: QueueSettings | None = None
    since: datetime | None = None
    if config is not None:
        since = config.imported_at
        row = config.queues.filter(path=queue_path).first()
        if row is not None:
            base = QueueSettings(row.max, row.quota_preemption_delay, True, False, row.depth)
    snapshot = latest_snapshot(partition)
    if base is None and snapshot is not None:
        found = _snapshot_queue_settings(snapshot, queue_path)
        if found is not None:
            # a queue the config does not know is dynamic (template or placement)
            base = QueueSettings(found.max, found.delay, True, config is not None, found.depth)
    if base is None:
        return QueueSettings(None, 0.0, False, False, queue_path.count("."))
    changes = models.QuotaChange.objects.filter(partition=partition, queue_path=queue_path).exclude(
        state__in=[models.QuotaChange.State.CANCELLED, models.QuotaChange.State.PENDING]
    )
    if since is not None:
        changes = changes.filter(changed_at__gte=since)
    last = changes.order_by("-changed_at", "-id").first()
    if last is None:
        return base
    return QueueSettings(last.new_max, last.delay, True, base.is_dynamic, base.depth)


def settings_by_queue(
    partition: models.Partition, snapshot: models.ClusterSnapshot
) -> dict[str, QueueSettings]:
    """:func:`queue_settings` for every queue of *snapshot*, the partition's latest
    snapshot, in a fixed number of queries (same rules: the config, then later changes)."""
    config = latest_config(partition)
    configured = {q.path: q for q in config.queues.all()} if config is not None else {}
    rows = {q.path: q for q in snapshot.queues.all()}
    result: dict[str, QueueSettings] = {}
    for path in rows:
        c = configured.get(path)
        if c is not None:
            result[path] = QueueSettings(c.max, c.quota_preemption_delay, True, False, c.depth)
            continue
        row = rows[path]
        delay = _snapshot_delay(rows, row)
        result[path] = QueueSettings(row.max, delay, True, config is not None, row.depth)
    changes = models.QuotaChange.objects.filter(partition=partition).exclude(
        state__in=[models.QuotaChange.State.CANCELLED, models.QuotaChange.State.PENDING]
    )
    if config is not None:
        changes = changes.filter(changed_at__gte=config.imported_at)
    for change in changes.order_by("changed_at", "id"):  # the last one of a queue wins
        base = result.get(change.queue_path)
        if base is not None:
            result[change.queue_path] = QueueSettings(
                change.new_max, change.delay, True, base.is_dynamic, base.depth
            )
    return result


def _snapshot_delay(rows: Mapping[str, models.SnapshotQueue], row: models.SnapshotQueue) -> float:
    """The queue's own delay, else the nearest ancestor's (as in the snapshot), else 0."""
    while row.quota_preemption_delay is None:
        parent = rows.get(row.parent_path) if row.parent_path else None
        if parent is None:
            return 0.0
        row = parent
    return float(row.quota_preemption_delay)


def start_usage_timers(
    partition: models.Partition, snapshot: models.ClusterSnapshot, *, now: datetime | None = None
) -> list[models.QuotaChange]:
    """Start the timer of every queue whose usage rose above its max in *snapshot*.

    engine.md section 5, "usage rises above the max while idle and the delay is > 0
    -> waiting(now + delay)", applied when a snapshot arrives: a queue with no active
    change whose usage in this snapshot exceeds the max in force, where the partition's
    previous snapshot (less what enforcement already took there) did not, gets a
    waiting change with ``cause=usage_rose`` (the max itself is unchanged) and a
    warning in the alert feed. ``now`` is when the dashboard saw the rise: the timer's
    start. A snapshot older than the partition's latest starts nothing, and nor does a
    queue that was already above its max (it rose earlier; nothing new happened).

    Runs inside the caller's transaction; the partition row is locked like a change.
    """
    now = now or utcnow()
    models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
    partition.refresh_from_db(fields=["quota_preemption_enabled"])
    if not partition.quota_preemption_enabled:
        return []
    if latest_snapshot(partition) != snapshot:
        return []
    previous = (
        partition.snapshots.exclude(pk=snapshot.pk)
        .filter(captured_at__lte=snapshot.captured_at)
        .order_by("-captured_at", "-id")
        .first()
    )
    active = set(
        models.QuotaChange.objects.filter(
            partition=partition, state__in=models.QuotaChange.ACTIVE_STATES
        ).values_list("queue_path", flat=True)
    )
    in_force = settings_by_queue(partition, snapshot)
    config = latest_config(partition)
    started: list[models.QuotaChange] = []
    for row in snapshot.queues.order_by("-depth", "path"):
        current = in_force[row.path]
        if row.path in active or current.max is None or current.delay <= 0:
            continue
        usage = {t: q for t, q in row.usage.items() if q}
        step = timers.timer_step(
            timers.TimerState.idle(),
            timers.UsageRose(
                max=current.max,
                usage=usage,
                delay=current.delay,
                enabled=True,
                dynamic=current.is_dynamic,
            ),
            _epoch(now),
        )
        if step.action != "start_wait" or step.state.deadline is None:
            continue
        before = queue_usage(previous, row.path) if previous is not None else None
        if before is not None and exceeds(before, current.max):
            continue  # already above in the previous snapshot: it did not rise now
        deadline = _from_epoch(step.state.deadline)
        try:
            with transaction.atomic():
                change = models.QuotaChange.objects.create(
                    partition=partition,
                    queue_path=row.path,
                    depth=row.depth,
                    cause=models.QuotaChange.Cause.USAGE_ROSE,
                    old_max=current.max,
                    new_max=current.max,
                    old_delay=current.delay,
                    delay=current.delay,
                    state=models.QuotaChange.State.WAITING,
                    changed_at=now,
                    deadline=deadline,
                    reason=(
                        f"timer started: usage rose above the max in snapshot {snapshot.pk}; "
                        f"quota preemption fires at {deadline.isoformat()} "
                        f"(delay {current.delay:g}s)"
                    ),
                    config_version=config,
                    snapshot=snapshot,
                )
        except IntegrityError:  # a change for the queue was saved meanwhile: it decides
            continue
        raise_alert(
            models.Alert.Kind.TIMER,
            f"{row.path}: usage {_resource_text(usage)} rose above the max "
            f"{_resource_text(current.max)} in snapshot {snapshot.pk}; quota preemption "
            f"fires at {deadline.isoformat()} (change {change.pk}) unless usage falls "
            "within the max or the max is raised first",
            partition=partition,
            queue=row.path,
            change=change,
            now=now,
        )
        started.append(change)
    return started


def queue_guaranteed(partition: models.Partition, queue_path: str) -> Resource | None:
    """The queue's own guaranteed: from the latest config, else the latest snapshot."""
    config = latest_config(partition)
    if config is not None:
        row = config.queues.filter(path=queue_path).first()
        if row is not None:
            return row.guaranteed
    snapshot = latest_snapshot(partition)
    if snapshot is not None:
        found = snapshot.queues.filter(path=queue_path).first()
        if found is not None:
            return found.guaranteed
    return None


def check_max_above_guaranteed(
    new_max: Mapping[str, int] | None,
    guaranteed: Mapping[str, int] | None,
    delay: float,
    queue_path: str,
) -> None:
    """With a quota preemption delay, a max must stay above the guarantee in every type both
    define (quota seed, "Meaningful Quota Decrease"; the config importer applies the same rule).

    Raises:
        ServiceError: naming ``new_max``, the type and both values.
    """
    if not delay or new_max is None or not guaranteed:
        return
    for t in sorted(set(new_max) & set(guaranteed)):
        if new_max[t] <= guaranteed[t]:
            raise ServiceError(
                "new_max",
                f"{queue_path}: max {t} {new_max[t]} must be greater than guaranteed "
                f"{guaranteed[t]} because a quota preemption delay ({delay:g}s) is set: a "
                "lowered quota must stay above the guarantee",
            )


def queue_usage(snapshot: models.ClusterSnapshot, queue_path: str) -> dict[str, int] | None:
    """U(Q) in *snapshot*, less the victims quota enforcement already took there."""
    row = snapshot.queues.filter(path=queue_path).first()
    if row is None:
        return None
    usage = dict(row.usage)
    taken = models.RunVictim.objects.filter(
        run__snapshot=snapshot,
        run__kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        run__status=models.PreemptionRun.Status.DONE,
    ).filter(Q(queue=queue_path) | Q(queue__startswith=queue_path + "."))
    for v in taken:
        for t, q in (v.resources or {}).items():
            usage[t] = usage.get(t, 0) - int(q)
    return {t: q for t, q in usage.items() if q}


def schedule_quota_change(
    partition: models.Partition,
    queue_path: str,
    *,
    new_max: Mapping[str, int] | None = _UNSET,
    new_delay: float | None = _UNSET,
    user: UserLike = None,
    snapshot: models.ClusterSnapshot | None = None,
    config_version: models.ConfigVersion | None = None,
    now: datetime | None = None,
) -> models.QuotaChange:
    """Save a change of one queue's max and/or quota preemption delay and decide its timer.

    Args:
        partition: the queue's partition.
        queue_path: the queue (leaf or parent).
        new_max: the new max (``None`` removes the max); omitted = unchanged.
        new_delay: the new delay in seconds; omitted = unchanged.
        snapshot: the cluster state to judge usage by (default: the latest).
        config_version: the config import this change came from, if any.
        now: the change time (the timer's start); default: the clock, read once the
            queue's partition is locked, so that concurrent changes get their times in
            the order they are saved.

    Raises:
        ServiceError: unknown queue, bad resource, or nothing changed.
    """
    if new_max is not _UNSET:
        new_max = validate_resource(new_max, "new_max")
    if new_delay is not _UNSET and new_delay is not None:
        if isinstance(new_delay, bool) or not isinstance(new_delay, int | float) or new_delay < 0:
            raise ServiceError("new_delay", "must be a non-negative number of seconds")
        new_delay = float(new_delay)
    for attempt in range(3):
        try:
            return _schedule_once(
                partition, queue_path, new_max, new_delay, user, snapshot, config_version, now
            )
        except IntegrityError:
            # a concurrent change for the same queue won the race for the active slot
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _schedule_once(
    partition: models.Partition,
    queue_path: str,
    new_max: Mapping[str, int] | None,
    new_delay: float | None,
    user: UserLike,
    snapshot: models.ClusterSnapshot | None,
    config_version: models.ConfigVersion | None,
    now: datetime | None,
    *,
    baseline: QueueSettings | None = None,
) -> models.QuotaChange:
    with transaction.atomic():
        # Changes of one partition are saved one at a time (also when the queue has no
        # active change to lock yet), and the clock is read inside the lock: the change
        # saved last is the newest one, which queue_settings() reports as in force.
        models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
        now = now or utcnow()
        active = (
            models.QuotaChange.objects.select_for_update()
            .filter(
                partition=partition,
                queue_path=queue_path,
                state__in=models.QuotaChange.ACTIVE_STATES,
            )
            .first()
        )
        current = baseline or queue_settings(partition, queue_path)
        if not current.is_known:
            raise ServiceError(
                "queue_path", f"unknown queue {queue_path!r} in partition {partition.name}"
            )
        target_max = current.max if new_max is _UNSET else new_max
        target_delay = current.delay if new_delay is _UNSET or new_delay is None else new_delay
        if target_max == current.max and target_delay == current.delay:
            raise ServiceError(
                "new_max", "nothing changes: the max and the delay are as configured"
            )
        if baseline is None:  # a config import was checked by the importer already
            check_max_above_guaranteed(
                target_max, queue_guaranteed(partition, queue_path), target_delay, queue_path
            )
        snap = snapshot or latest_snapshot(partition)
        usage = queue_usage(snap, queue_path) if snap is not None else None
        decision = decide_change(
            active=active,
            quota_preemption_enabled=partition.quota_preemption_enabled,
            old_delay=current.delay,
            delay=target_delay,
            old_max=current.max,
            new_max=target_max,
            usage=usage,
            is_dynamic=current.is_dynamic,
            queue=queue_path,
            now=now,
        )
        change = models.QuotaChange.objects.create(
            partition=partition,
            queue_path=queue_path,
            depth=queue_path.count("."),
            old_max=current.max,
            new_max=target_max,
            old_delay=current.delay,
            new_delay=None if new_delay is _UNSET else new_delay,
            delay=target_delay,
            state=models.QuotaChange.State.PENDING,
            changed_at=now,
            created_by=_user(user),
            config_version=config_version or latest_config(partition),
            snapshot=snap,
        )
        if active is not None and decision.previous is not None:
            active.state = decision.previous
            active.superseded_by = change
            active.finished_at = now
            active.reason = (
                f"cancelled by the increase in change {change.pk}"
                if decision.previous == models.QuotaChange.State.CANCELLED_BY_INCREASE
                else f"superseded by change {change.pk} at {now.isoformat()}"
            )
            active.save(
                update_fields=["state", "superseded_by", "finished_at", "reason", "updated_at"]
            )
            if decision.previous == models.QuotaChange.State.CANCELLED_BY_INCREASE:
                raise_alert(
                    models.Alert.Kind.CANCELLED_BY_INCREASE,
                    f"{queue_path}: the pending quota decrease (change {active.pk}, due "
                    f"{active.deadline.isoformat() if active.deadline else '-'}) was cancelled "
                    f"by an increase of the max (change {change.pk}); no preemption",
                    level=models.Alert.Level.INFO,
                    partition=partition,
                    queue=queue_path,
                    change=active,
                    now=now,
                )
        change.state = decision.state
        change.deadline = decision.deadline
        change.reason = decision.reason
        if decision.state != models.QuotaChange.State.WAITING:
            change.finished_at = now
        change.save(update_fields=["state", "deadline", "reason", "finished_at", "updated_at"])
        if decision.state == models.QuotaChange.State.SKIPPED:
            raise_alert(
                models.Alert.Kind.CHANGE_SKIPPED,
                f"{queue_path}: change {change.pk} arrived while a quota preemption runs "
                "for this queue; it was recorded and skipped",
                partition=partition,
                queue=queue_path,
                change=change,
                now=now,
            )
        return change


def cancel_quota_change(
    change: models.QuotaChange, *, user: UserLike = None, now: datetime | None = None
) -> models.QuotaChange:
    """Withdraw a waiting change (its timer stops; the previous max stays in force)."""
    now = now or utcnow()
    with transaction.atomic():
        n = models.QuotaChange.objects.filter(
            pk=change.pk, state=models.QuotaChange.State.WAITING
        ).update(
            state=models.QuotaChange.State.CANCELLED,
            finished_at=now,
            reason=f"cancelled by {getattr(_user(user), 'username', 'an administrator')}",
        )
        if not n:
            change.refresh_from_db()
            raise ServiceError(
                "state", f"only a waiting change can be cancelled; this one is {change.state}"
            )
    change.refresh_from_db()
    return change


def _resource_text(resource: Mapping[str, int] | None) -> str:
    if not resource:
        return "nothing"
    return ", ".join(f"{t} {q}" for t, q in sorted(resource.items()))


def _complete_change(
    run: models.PreemptionRun, answer: _RunAnswer, finished: datetime
) -> models.QuotaChange | None:
    """Mark the change of a finished enforcement run done; re-check changes skipped meanwhile.

    Returns the change (None when no running change belongs to the run).
    """
    change = models.QuotaChange.objects.filter(
        run=run, state=models.QuotaChange.State.RUNNING
    ).first()
    if change is None:
        return None
    change.state = models.QuotaChange.State.DONE
    change.finished_at = finished
    change.reason = (
        f"fired: quota enforcement {answer['outcome']} ({len(answer['victims'])} victims)"
    )
    change.save(update_fields=["state", "finished_at", "reason", "updated_at"])
    skipped = (
        models.QuotaChange.objects.filter(
            partition=change.partition,
            queue_path=change.queue_path,
            state=models.QuotaChange.State.SKIPPED,
            changed_at__gte=change.started_at or change.changed_at,
        )
        .order_by("-changed_at", "-id")
        .first()
    )
    if skipped is None or run.snapshot is None:
        return change
    partition = change.partition
    started = change.started_at or change.changed_at
    step = timers.timer_step(
        timers.TimerState.running(_epoch(started), change.new_max),
        timers.Completed(
            max=skipped.new_max,
            usage=queue_usage(run.snapshot, change.queue_path),
            delay=skipped.delay,
            enabled=partition.quota_preemption_enabled,
        ),
        _epoch(finished),
    )
    if step.action == "rewait" and step.state.deadline is not None:
        follow = models.QuotaChange.objects.create(
            partition=partition,
            queue_path=change.queue_path,
            depth=change.depth,
            old_max=change.new_max,
            new_max=skipped.new_max,
            old_delay=change.delay,
            new_delay=skipped.new_delay,
            delay=skipped.delay,
            state=models.QuotaChange.State.WAITING,
            cause=models.QuotaChange.Cause.RECHECK,
            changed_at=finished,
            deadline=_from_epoch(step.state.deadline),
            reason=f"re-check of skipped change {skipped.pk}: {step.note}",
            created_by=skipped.created_by,
            config_version=skipped.config_version,
            snapshot=run.snapshot,
        )
        skipped.superseded_by = follow
        skipped.save(update_fields=["superseded_by", "updated_at"])
    return change


def _ancestors(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _claim_change(change_id: int, now: datetime) -> int | None:
    """Claim one due change (waiting -> running) and create its enforcement run."""
    try:
        with transaction.atomic():
            qs = models.QuotaChange.objects.filter(
                pk=change_id, state=models.QuotaChange.State.WAITING, deadline__lte=now
            )
            if connection.features.has_select_for_update_skip_locked:
                qs = qs.select_for_update(skip_locked=True)
            else:  # SQLite: BEGIN IMMEDIATE already serializes writers
                qs = qs.select_for_update()
            change = qs.select_related("partition").first()
            if change is None:
                return None
            ancestor_running = models.QuotaChange.objects.filter(
                partition=change.partition,
                state=models.QuotaChange.State.RUNNING,
                queue_path__in=_ancestors(change.queue_path),
            ).exists()
            snapshot = latest_snapshot(change.partition) or change.snapshot
            if snapshot is None:
                models.QuotaChange.objects.filter(pk=change.pk).update(
                    state=models.QuotaChange.State.FAILED,
                    finished_at=now,
                    reason="no cluster snapshot to evaluate the change against",
                )
                raise_alert(
                    models.Alert.Kind.TIMER,
                    f"{change.queue_path}: change {change.pk} is due but the partition has no "
                    "snapshot; import one and schedule the change again",
                    level=models.Alert.Level.ERROR,
                    partition=change.partition,
                    queue=change.queue_path,
                    change=change,
                    now=now,
                )
                return None
            assert change.deadline is not None  # waiting rows always have one
            step = timers.timer_step(
                timers.TimerState.waiting(_epoch(change.deadline)),
                timers.Tick(
                    max=change.new_max,
                    usage=queue_usage(snapshot, change.queue_path),
                    delay=change.delay,
                    enabled=change.partition.quota_preemption_enabled,
                    ancestor_running=ancestor_running,
                ),
                _epoch(now),
            )
            if step.action in ("none", "skipped_ancestor_running"):
                return None  # an ancestor's preemption runs: this one fires at a later sweep
            if step.action != "start_preemption":
                done = models.QuotaChange.objects.filter(
                    pk=change.pk, state=models.QuotaChange.State.WAITING
                ).update(
                    state=models.QuotaChange.State.DONE,
                    started_at=now,
                    finished_at=now,
                    snapshot=snapshot,
                    reason=f"fired without preemption: {step.note}",
                )
                if done:
                    raise_alert(
                        models.Alert.Kind.QUOTA,
                        f"{change.queue_path}: quota change {change.pk} fired without "
                        f"preemption: {step.note}",
                        level=models.Alert.Level.INFO,
                        partition=change.partition,
                        queue=change.queue_path,
                        change=change,
                        now=now,
                    )
                return None
            run = models.PreemptionRun.objects.create(
                partition=change.partition,
                snapshot=snapshot,
                kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
                trigger=models.PreemptionRun.Trigger.TIMER,
                status=models.PreemptionRun.Status.PENDING,
                queue=change.queue_path,
                request={
                    "change": change.pk,
                    "queue": change.queue_path,
                    "new_max": change.new_max,
                },
                idempotency_key=f"quota-change-{change.pk}",
                created_by=change.created_by,
                queued_at=now,
            )
            claimed = models.QuotaChange.objects.filter(
                pk=change.pk, state=models.QuotaChange.State.WAITING
            ).update(state=models.QuotaChange.State.RUNNING, started_at=now, run=run)
            if claimed != 1:
                transaction.set_rollback(True)
                return None
            return run.pk
    except IntegrityError:
        logger.info("change %s not claimed: lost a race", change_id)
        return None


@dataclass(frozen=True, slots=True)
class SweepReport:
    fired: tuple[int, ...]
    recovered: tuple[int, ...]


def sweep_due_changes(now: datetime | None = None) -> SweepReport:
    """Fire every due quota change once: deepest first, then by path; recover stale runs.

    Safe to run concurrently (row locks, conditional updates and the constraints
    decide who wins) and after any restart: a deadline that passed while nothing
    ran fires now.
    """
    now = now or utcnow()
    recovered = _recover_stale_runs(now)
    fired: list[int] = []
    due = list(
        models.QuotaChange.objects.filter(state=models.QuotaChange.State.WAITING, deadline__lte=now)
        .order_by("-depth", "queue_path", "deadline", "id")
        .values_list("pk", flat=True)
    )
    for change_id in due:
        run_id = _claim_change(change_id, now)
        if run_id is None:
            continue
        execute_run(run_id, now=now)
        fired.append(change_id)
    return SweepReport(tuple(fired), tuple(recovered))


def _recover_stale_runs(now: datetime) -> list[int]:
    """Runs whose worker vanished (lease expired) or whose message was lost get another go."""
    requeue_before = now - timedelta(seconds=settings.DASHBOARD_RUN_REQUEUE_SECONDS)
    pending = Q(status=models.PreemptionRun.Status.PENDING, queued_at__lt=requeue_before) & (
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )
    stale = list(
        models.PreemptionRun.objects.filter(
            Q(status=models.PreemptionRun.Status.RUNNING, lease_until__lt=now) | pending
        )
        .order_by("queued_at", "id")
        .values_list("pk", "kind", "status")
    )
    out: list[int] = []
    for run_id, kind, status in stale:
        out.append(run_id)
        if status == models.PreemptionRun.Status.PENDING:
            # for a pending run, lease_until is "not re-sent again before"
            models.PreemptionRun.objects.filter(pk=run_id, status=status).update(
                lease_until=now + timedelta(seconds=settings.DASHBOARD_RUN_REQUEUE_SECONDS)
            )
        if kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            execute_run(run_id, now=now)
        else:
            enqueue_run(run_id)
    return out


# -- read-only engine views of a stored snapshot (pages) ------------------------------


def queue_preemptable(snapshot: models.ClusterSnapshot) -> dict[str, dict[str, int] | None]:
    """The engine's ``preemptable(Q)`` for every queue of a stored snapshot (one build)."""
    snap = build_snapshot(cluster_from_snapshot(snapshot))
    return {info.path: queues.preemptable(snap, info.path) for info in snap}


#: Reason texts for administrators: resources in cores and binary bytes, UTC times.
EXPLAIN_TEXT = explain.TextFormat(
    resource=charts.format_resource,
    instant=charts.format_instant,
    duration=charts.format_duration,
)


def explain_victims(
    snapshot: models.ClusterSnapshot, queue_path: str, *, limit: int | None = None
) -> dict[str, object]:
    """Why each allocation of *queue_path* would (not) be a quota victim, as a dict.

    Raises:
        ServiceError: naming the field, for an unknown queue.
    """
    try:
        answer = explain.explain_victims(
            cluster_from_snapshot(snapshot),
            queue_path,
            now=snapshot_now(snapshot),
            limit=limit,
            text=EXPLAIN_TEXT,
        )
    except ScenarioError as exc:
        raise ServiceError(exc.field or "queue", exc.message) from exc
    return answer.to_dict()
