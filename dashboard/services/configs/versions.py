"""Config versions: importing queues.yaml or a ConfigMap, diffs between versions, export."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction

from dashboard import models
from dashboard.importers.config import (
    ConfigImport,
    PartitionSpec,
    QueueSpec,
    TooManyConfigQueues,
    parse_config,
)
from dashboard.importers.config.diff import diff_partitions
from dashboard.importers.errors import ImportFailure
from dashboard.importers.export import export_config, export_configmap
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.collector import collector_paused
from dashboard.plumbing.errors import ImportRejected, ServiceError
from dashboard.plumbing.users import stored_user
from dashboard.services.alerts import raise_alert, refused_import
from dashboard.services.limits import (
    check_upload_size,
    config_queue_limit,
    too_many_config_queues,
)
from dashboard.services.quota.changes import LearnedChange, save_learned_changes
from dashboard.services.quota.enforcement import settle_enforced
from dashboard.services.quota.queue_settings import (
    QueueSettings,
    queue_settings,
    settings_for_paths,
)
from dashboard.services.quota.scheduler_clock import (
    Clock,
    ClusterClock,
    ClusterClocks,
    apply_planned,
    befores_by_scheduler_clock,
)
from dashboard.services.scope.cluster_choice import import_cluster
from dashboard.services.scope.latest import latest_config, latest_snapshot, next_config_number

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike


@dataclass(frozen=True, slots=True)
class ConfigImportResult:
    versions: tuple[models.ConfigVersion, ...]
    changes: tuple[models.QuotaChange, ...]
    unchanged: tuple[int, ...] = ()
    """Ids of *versions* that were in force already (the same config again: nothing stored)."""


def import_config(
    data: bytes,
    *,
    filename: str = "queues.yaml",
    user: UserLike = None,
    partition: str | None = None,
    cluster: str | None = None,
    now: datetime | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> ConfigImportResult:
    """Import a queue config (queues.yaml or ConfigMap): one version per partition.

    The partitions belong to *cluster* (made when new); without one, to the only
    cluster (``default`` while there is none), else the import is refused naming
    the clusters there are.

    Every queue whose max or quota delay differs from what was in force gets a
    quota change the cluster made: its timer starts at the scheduler's change time
    (:mod:`dashboard.services.quota.scheduler_clock`; the import time only where that is
    unknown, and the change says so). Changes planned in the dashboard that the
    config shows are applied from then on.
    Nothing is stored when the importer refuses the file; the refusal is
    recorded in the alert feed.

    *progress* (an import job's) is told the stage and the percent done.

    Raises:
        ImportRejected: naming the line or key; UploadTooLarge.
    """
    now = now or utcnow()
    check_upload_size(filename, len(data))
    try:
        with collector_paused():  # see store_config_import
            parsed = parse_config(data, filename=filename, max_queues=config_queue_limit())
    except ImportFailure as exc:
        where = f" for cluster {cluster}" if cluster else ""  # two clusters may share names
        refused = refused_import(exc, filename, f"config {filename}{where}", now)
        if isinstance(exc, TooManyConfigQueues):
            raise too_many_config_queues(exc) from exc
        raise refused from exc
    return store_config_import(
        parsed,
        filename=filename,
        user=user,
        partition=partition,
        cluster=cluster,
        now=now,
        progress=progress,
    )


def store_config_import(
    parsed: ConfigImport,
    *,
    filename: str,
    now: datetime,
    user: UserLike = None,
    partition: str | None = None,
    cluster: str | None = None,
    progress: Callable[[str, int], None] | None = None,
    alert_warnings: bool = True,
) -> ConfigImportResult:
    """Store a parsed config as :func:`import_config` does (its second half): one version
    per partition, learned changes on the scheduler's clock, planned changes applied.
    The parser's warnings are kept on the version; alerted unless *alert_warnings* is
    False (a live source raises them once itself)."""
    parts = [p for p in parsed.partitions if partition is None or p.name == partition]
    if not parts:
        names = ", ".join(p.name for p in parsed.partitions)
        raise ImportRejected("partition", f"{filename} has no partition {partition!r} ({names})")
    versions: list[models.ConfigVersion] = []
    changes: list[models.QuotaChange] = []
    unchanged: list[int] = []
    if progress is not None:
        count = sum(1 for spec in parts for _ in spec.queues())
        progress(f"storing {count} queues of {len(parts)} partition(s)", 40)
    # the collector's full passes over a big config's objects cost more than the config
    # grows (docs/benchmarks/config-reimport.md); its garbage is collected after
    with collector_paused(), transaction.atomic():
        cluster_row = import_cluster(cluster)
        for spec in parts:
            row, _ = models.Partition.objects.select_for_update().get_or_create(
                cluster=cluster_row, name=spec.name
            )
            previous = latest_config(row)
            if previous is not None and config_matches(previous, parsed, spec):
                # the config in force again: no version, no change (a re-import must not
                # undo the changes planned since, nor restart the config's clock)
                versions.append(previous)
                unchanged.append(previous.pk)
                continue
            new_queues = {q.path: q for q in spec.queues()}
            # what the cluster ran before this import: the old config plus the changes seen
            # applied there; and what the dashboard knows (planned changes too). Neither
            # counts the scheduler's events, so that a config and the QUEUE_MAX events
            # explaining it learn one change whichever was stored first.
            baseline = (
                settings_for_paths(row, new_queues, observed=False) if previous is not None else {}
            )
            known = (
                settings_for_paths(row, new_queues, planned=True, observed=False)
                if previous
                else {}
            )
            row.quota_preemption_enabled = spec.quota_preemption_enabled
            row.save(update_fields=["quota_preemption_enabled"])
            version = store_config_version(
                row, parsed, spec, filename=filename, warnings=parsed.warnings, user=user, now=now
            )
            for w in parsed.warnings if alert_warnings else ():
                raise_alert(
                    models.Alert.Kind.IMPORT_WARNING,
                    f"config v{version.number} of {cluster_row.name}/{spec.name} ({filename}): {w}",
                    partition=row,
                    now=now,
                )
            # one snapshot for every change's usage (not one look-up per queue)
            snapshot = latest_snapshot(row, defer_state=True) if previous is not None else None
            clocks = ClusterClocks(
                row,
                [p for p, b in baseline.items() if b.is_known and b.max != new_queues[p].max],
                not_after=now,
            )
            # the queues whose max or delay the cluster changed, deepest first, each with
            # what was in force before and the scheduler's clock of the change
            candidates: dict[str, tuple[QueueSettings, ClusterClock]] = {}
            for path, q in sorted(new_queues.items(), key=lambda e: (-e[0].count("."), e[0])):
                before = baseline.get(path)
                if before is None or not before.is_known:
                    continue
                if before.max == q.max and before.delay == q.quota_preemption_delay:
                    continue
                planned = known.get(path)
                if (
                    planned is not None
                    and planned.max == q.max
                    and planned.delay == q.quota_preemption_delay
                ):
                    continue  # a change planned in the dashboard, applied just below
                # the cluster made this change: its timer runs by the scheduler's clock
                candidates[path] = (
                    before,
                    clocks.learned(path, q.max, now)
                    if before.max != q.max
                    else ClusterClock(now, Clock.CONFIG_IMPORT, "a delay change has no event"),
                )
            # the max in force just before each, by the scheduler's clock alone
            befores = befores_by_scheduler_clock(row, candidates)
            learned = [
                LearnedChange(path, q.max, q.quota_preemption_delay, before, clock)
                for path, (_, clock) in candidates.items()
                for q, before in [(new_queues[path], befores[path])]
                if before.max != q.max or before.delay != q.quota_preemption_delay
            ]
            changes += save_learned_changes(
                row, learned, user=user, snapshot=snapshot, config_version=version
            )
            apply_planned(
                row,
                {p: (q.max, q.quota_preemption_delay) for p, q in new_queues.items()},
                version,
                now,
            )
            settle_enforced(row, now=now)
            versions.append(version)
    return ConfigImportResult(tuple(versions), tuple(changes), tuple(unchanged))


def config_matches(latest: models.ConfigVersion, parsed: ConfigImport, spec: PartitionSpec) -> bool:
    """Whether *spec* (a partition of *parsed*) is what *latest*, a version in force, holds:
    the same text, or no difference in queues, limits, properties, delays and flags."""
    if latest.checksum and latest.checksum == parsed.checksum:
        return True
    try:
        stored = parse_config(latest.text, filename=latest.filename or "queues.yaml")
    except ImportFailure:  # a parser change refuses an old text: store the new one
        return False
    mine = [p for p in stored.partitions if p.name == latest.partition.name]
    if not mine:
        return False
    theirs = replace(spec, name=mine[0].name)
    return (
        not diff_partitions(mine, [theirs])
        and _acls(mine[0]) == _acls(spec)  # the queue ACLs grant the dashboard's permissions
        and mine[0].quota_preemption_enabled == spec.quota_preemption_enabled
        and mine[0].preemption_enabled == spec.preemption_enabled
    )


def _acls(spec: PartitionSpec) -> dict[str, tuple[object, object]]:
    """Every queue's adminacl and submitacl as written."""
    return {q.path: (q.raw.get("adminacl"), q.raw.get("submitacl")) for q in spec.queues()}


def store_config_version(
    row: models.Partition,
    parsed: ConfigImport,
    spec: PartitionSpec,
    *,
    filename: str,
    warnings: Iterable[str],
    user: UserLike,
    now: datetime,
    planned: bool = False,
) -> models.ConfigVersion:
    """Store one partition's part of a parsed config as the partition's next version,
    with its queue rows; *planned* versions are kept but never become the config in force."""
    version = models.ConfigVersion.objects.create(
        partition=row,
        number=next_config_number(row),
        filename=filename[:255],
        text=parsed.text,
        checksum=parsed.checksum,
        quota_preemption_enabled=spec.quota_preemption_enabled,
        warnings=list(warnings),
        parsed={
            **spec.to_dict(),
            "source_format": parsed.source_format,
            "extra": dict(parsed.extra),
        },
        imported_by=stored_user(user),
        imported_at=now,
        planned=planned,
    )
    _store_queues(version, spec.queues())
    return version


def _store_queues(version: models.ConfigVersion, queues: Iterable[QueueSpec]) -> None:
    """The version's queue rows, one bulk insert per tree level (parents first, so each
    row can point at its parent), instead of one INSERT per queue."""
    levels: dict[int, list[QueueSpec]] = defaultdict(list)
    for q in queues:
        levels[q.path.count(".")].append(q)
    by_path: dict[str, models.ConfigQueue] = {}
    for depth in sorted(levels):
        rows = [
            models.ConfigQueue(
                version=version,
                path=q.path,
                name=q.name,
                parent=by_path.get(q.path.rpartition(".")[0]),
                depth=depth,
                guaranteed=q.guaranteed,
                max=q.max,
                properties=dict(q.properties),
                quota_preemption_delay=q.quota_preemption_delay,
                is_leaf=q.is_leaf,
                is_parent_flag=bool(q.parent),
            )
            for q in levels[depth]
        ]
        for stored in models.ConfigQueue.objects.bulk_create(rows, batch_size=500):
            by_path[stored.path] = stored


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
                # the administrator's plan is written in (planned changes too)
                now_in_force = queue_settings(version.partition, path, planned=True)
                row = version.queues.filter(path=path).first()
                if row is not None and now_in_force.max != row.max:
                    overrides[path] = now_in_force.max
        name = version.partition.name
        if configmap:
            return export_configmap(parsed, overrides=overrides, partition=name)
        return export_config(parsed, overrides=overrides, partition=name)
    except ImportFailure as exc:
        raise ServiceError(exc.location or "config", exc.message) from exc
