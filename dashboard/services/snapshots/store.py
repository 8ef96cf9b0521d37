"""Importing and storing cluster snapshots: validated by the engine, stored in one transaction.

The validation of a snapshot's scenario and the checksum it is stored with are
in :mod:`dashboard.services.snapshots.checksum`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from django.conf import settings
from django.db import transaction

from dashboard import models
from dashboard.importers.errors import ImportFailure
from dashboard.importers.scheduler_clock import scheduler_timers as read_scheduler_timers
from dashboard.importers.snapshot import SnapshotImport, file_sizes, parse_snapshot
from dashboard.importers.snapshot.access import shared_map_counts
from dashboard.plumbing.clock import as_datetime, utcnow
from dashboard.plumbing.errors import ImportRejected
from dashboard.plumbing.users import stored_user
from dashboard.services import limits
from dashboard.services.alerts import raise_alert, refused_import
from dashboard.services.configs.from_scheduler import store_answer_config
from dashboard.services.history.work_lost import record_completed
from dashboard.services.limits import Resource, check_upload_size
from dashboard.services.quota.deadlines import rules_named
from dashboard.services.quota.restarts import note_scheduler_instance, served_start_time
from dashboard.services.quota.timers import snapshot_arrived
from dashboard.services.runs.observed import record_observed
from dashboard.services.runs.requests import prepare_broker_in_background, send_task_on_commit
from dashboard.services.scope.cluster_choice import import_cluster, import_partition
from dashboard.services.snapshots.already_imported import with_answers_mark
from dashboard.services.snapshots.checksum import (
    AllocationTexts,
    cluster_checksum,
    stored_rest,
    validated_asks,
    validated_cluster,
)
from dashboard.services.snapshots.facts import (
    NodeFacts,
    allocation_facts_by_key,
    allocation_pods,
    node_facts_by_id,
    plain_queue_facts,
    queue_facts_by_path,
)
from dashboard.services.snapshots.spans import (
    APPLICATION_FIELDS,
    NODE_FIELDS,
    write_allocations,
    write_json_spans,
)
from engine import model as em
from engine.queues import build_snapshot, preemptable

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike


def store_snapshot(
    *,
    partition_name: str,
    cluster_name: str | None = None,
    cluster_id: str | None = None,
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
    cluster: em.Cluster | None = None,
    scheduler_timers: Mapping[str, Mapping[str, object]] | None = None,
    release_rows: bool = False,
    allocation_texts: AllocationTexts | None = None,
    warm_up: bool = True,
) -> models.ClusterSnapshot:
    """Validate a scenario (cluster part) with the engine and store it with its rows.

    *scheduler_timers* are the scheduler's running quota timers the import read
    (:func:`dashboard.importers.scheduler_clock.scheduler_timers`, as dicts): the
    dashboard's timers of those queues start when the scheduler's did.
    *allocation_texts*: a poller's texts of its last checksum
    (:class:`~dashboard.services.snapshots.checksum.AllocationTexts`).
    *warm_up*: have the workers build its engine state once committed
    (:func:`warm_up_workers`); a poller of a source polled often passes False.

    *cluster* is the engine's cluster of *scenario* when an import has validated
    it already (the snapshot is validated once). With *release_rows* (and
    *cluster*), the scenario's allocation list is emptied once their gang facts are
    read: an import's parse holds the importer's dict of each allocation beside the
    engine's object, most of its memory, and nothing reads the dicts after that; the
    rest of the store then reuses their memory instead of adding to the peak.

    The partition belongs to the cluster *cluster_name*, else the one known by the
    scheduler's *cluster_id*, else the only cluster (see
    :func:`~dashboard.services.scope.cluster_choice.import_cluster`). Everything is
    written in one transaction; a validation error raises :class:`ImportRejected`
    before anything is stored.
    """
    now = now or utcnow()
    if cluster is None:
        cluster = validated_cluster(scenario, "scenario")
    parsed_asks = validated_asks(cluster, asks, "scenario") if asks else ()
    snap = build_snapshot(cluster)
    rest = stored_rest(scenario, cluster)
    gang = {
        k: (g.placeholder, g.placeholder_used, g.task_group)
        for k, g in allocation_facts_by_key(scenario).items()
    }
    rows = scenario.get("allocations")
    pods = allocation_pods(rows)
    if release_rows and cluster is not None and isinstance(rows, list):
        rows.clear()
    del rows
    span_digests: dict[str, str] = {}  # each allocation's, from its text in the checksum
    digest = cluster_checksum(rest, cluster, span_digests, gang, allocation_texts)
    pending = queue_pending or {}
    queue_facts = queue_facts_by_path(scenario)
    node_facts = node_facts_by_id(scenario)
    # the warm-up tasks are sent after the commit: a cold process (the command line)
    # loads its broker client meanwhile, on a thread, while the writes below wait on
    # the database, instead of after the commit at the first send
    prepare_broker_in_background()
    with transaction.atomic():
        partition = import_partition(
            import_cluster(cluster_name, cluster_id=cluster_id),
            partition_name,
            quota_preemption_enabled=cluster.partition.quota_preemption_enabled,
            miss=cluster.partition.miss,
        )
        # one import of a partition at a time: its spans follow snapshot ids
        models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
        row = models.ClusterSnapshot.objects.create(
            partition=partition,
            source_kind=source_kind,
            source_detail=source_detail[:500],
            captured_at=captured_at,
            imported_at=now,
            imported_by=stored_user(user),
            # all but the nodes and allocations, stored once per span of snapshots
            scenario=rest,
            warnings=list(warnings),
            checksum=digest,
            scheduler_timers={q: dict(t) for q, t in (scheduler_timers or {}).items()},
        )
        queue_rows = []
        for info in snap:
            facts = queue_facts.get(info.path) or plain_queue_facts(info.usage, info.preempting)
            queue_rows.append(
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
                    allocated=facts.allocated,
                    status=facts.status,
                    dynamic=facts.dynamic,
                    max_applications=facts.max_applications,
                    running_apps=facts.running_apps,
                )
            )
        models.SnapshotQueue.objects.bulk_create(queue_rows)
        # the engine's preemptable of every queue, from the snapshot built above: the
        # pages read it instead of building the engine state
        models.SnapshotPreemptable.objects.create(
            snapshot=row, values={info.path: preemptable(snap, info.path) for info in snap}
        )
        allocated: dict[str, dict[str, int]] = {}
        for node, res, count in shared_map_counts(
            (a.node, a.resources) for a in cluster.allocations
        ):
            node_sum = allocated.setdefault(node, {})
            for t, q in res.items():
                node_sum[t] = node_sum.get(t, 0) + q * count
        write_json_spans(
            models.NodeSpan,
            partition,
            row.pk,
            NODE_FIELDS,
            (
                (
                    n.id,
                    dict(n.capacity),
                    allocated.get(n.id, {}),
                    n.schedulable,
                    (seen := node_facts.get(n.id) or NodeFacts(dict(n.capacity))).reported_capacity,
                    seen.occupied,
                    seen.foreign_pods,
                )
                for n in cluster.nodes
            ),
        )
        write_allocations(partition, row.pk, cluster.allocations, gang, span_digests, pods)
        del span_digests, gang, allocated, pods  # a hundred thousand entries each, done with
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
                pod=_pod_of(raw),
                scheduler_log=raw.get("scheduler_log") or [],
                scheduling_attempted=bool(raw.get("scheduling_attempted")),
                triggered_scale_up=bool(raw.get("triggered_scale_up")),
            )
            for a, raw in zip(parsed_asks, asks, strict=True)
        )
        seen_apps: set[str] = set()
        app_rows: list[tuple[object, ...]] = []
        for app in applications:
            app_id = str(app.get("app_id") or app.get("id") or "")
            if not app_id or app_id in seen_apps:
                continue
            seen_apps.add(app_id)
            app_rows.append(
                (
                    app_id,
                    str(app.get("queue") or ""),
                    str(app.get("state") or ""),
                    _plain_resource(app.get("used")),
                    _plain_resource(app.get("pending")),
                    # (scalars, most of the values, without a call each)
                    {k: v for k, v in app.items() if type(v) in _JSON_SCALARS or _is_json(v)},
                )
            )
        write_json_spans(models.ApplicationSpan, partition, row.pk, APPLICATION_FIELDS, app_rows)
        for w in warnings if alert_warnings else ():
            raise_alert(
                models.Alert.Kind.IMPORT_WARNING,
                f"snapshot {row.pk}: {w}",
                level=models.Alert.Level.INFO,
                partition=partition,
                now=now,
            )
        snapshot_arrived(partition, row, now=now, queues=queue_rows)
        if warm_up:
            warm_up_workers(row.pk)
    return row


def warm_up_workers(snapshot_id: int) -> None:
    """Have the workers build a snapshot's engine state (once the transaction commits).

    One task per worker process (DASHBOARD_WARM_UP_TASKS): each process keeps its
    own engine states, and an idle process takes the next task, so the copies
    spread over the pool; a process that has the state already does nothing.
    """
    for _ in range(settings.DASHBOARD_WARM_UP_TASKS):
        send_task_on_commit("dashboard.warm_snapshot", snapshot_id)


def _is_json(value: object) -> bool:
    if type(value) in _JSON_SCALARS:
        return True
    if type(value) is dict and all(
        type(k) is str and type(v) in _JSON_SCALARS for k, v in value.items()
    ):
        return True  # a resource map, most of an application's values
    if type(value) is list and all(
        type(v) in _JSON_SCALARS
        or (
            type(v) is dict
            and all(type(k) is str and type(x) in _JSON_SCALARS for k, x in v.items())
        )
        for v in value
    ):
        return True  # names, or records such as an application's state log
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


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


def _check_sizes(files: Mapping[str, bytes], max_bytes: tuple[int, str] | None) -> None:
    for name, size in file_sizes(files).items():
        check_upload_size(name, size, *(max_bytes or ()))


def parse_answers(
    files: Mapping[str, bytes],
    *,
    cluster: str | None = None,
    source_partition: str | None = None,
    now: datetime | None = None,
    max_bytes: tuple[int, str] | None = None,
) -> SnapshotImport:
    """The parse :func:`import_snapshot` stores: *files* checked against their size
    bound and parsed (the arguments are :func:`import_snapshot`'s).

    A caller that keeps the parse (the command line, which ends without freeing it)
    hands it to :func:`import_snapshot` as *parsed*.

    Raises:
        ImportRejected: naming the file and key (an alert says so); UploadTooLarge.
    """
    now = now or utcnow()
    _check_sizes(files, max_bytes)
    try:
        return parse_snapshot(
            files, partition=source_partition, **limits.snapshot_bounds(files, max_bytes)
        )
    except limits.TooManyQueues as exc:
        raise limits.too_many_queues(exc) from exc
    except ImportFailure as exc:
        raise refused_import(exc, *_refusal_names(files, cluster), now) from exc


def _refusal_names(files: Mapping[str, bytes], cluster: str | None) -> tuple[str, str]:
    """The files a refused import names, and what its alert calls the import."""
    names = ", ".join(sorted(files)) or "(no file)"
    where = f" for cluster {cluster}" if cluster else ""
    return names, f"snapshot {names}{where}"


def import_snapshot(
    files: Mapping[str, bytes],
    *,
    user: UserLike = None,
    partition: str | None = None,
    cluster: str | None = None,
    source_partition: str | None = None,
    alert_warnings: bool = True,
    now: datetime | None = None,
    parsed: SnapshotImport | None = None,
    max_bytes: tuple[int, str] | None = None,
    answers_digest: str | None = None,
    captured_at: datetime | None = None,
    allocation_texts: AllocationTexts | None = None,
    warm_up: bool = True,
) -> models.ClusterSnapshot:
    """Import a snapshot from a scenario JSON, YuniKorn REST files or a full state dump.

    The config the answers carry (``config.json``, a state dump's ``config``) is stored in the
    same transaction unless in force already (:mod:`dashboard.services.configs.from_scheduler`).

    Args:
        files: file name -> content.
        user: who imports.
        partition: store the snapshot under this partition name.
        cluster: store it in this cluster; default the cluster known by the
            answers' ``clusterId`` (made when new), else the only cluster.
        source_partition: the partition to read from a multi-partition state dump.
        alert_warnings: raise an info alert per importer warning (a poller that
            stores a snapshot every few seconds passes False; the warnings stay
            on the snapshot row).
        parsed: ``parse_snapshot(files, partition=source_partition)`` when the caller
            has already parsed them (the poller, which fingerprints the parse first).
            The import consumes it: its scenario's allocation list is emptied during
            the store (``store_snapshot(release_rows=True)``); its engine cluster
            (``parsed.cluster``) keeps every allocation.
        max_bytes: the largest file accepted and the setting that holds it (the
            poller's and the command line's ``SOURCES_MAX_ANSWER_BYTES``), the parse
            then accepting as many times that in total; default
            ``DASHBOARD_MAX_UPLOAD_BYTES`` per file and the importer's total bound.
        answers_digest: the hash of the files and options the command line read
            (:func:`~dashboard.services.snapshots.already_imported.answers_digest`), kept at the
            end of the snapshot's ``source_detail`` so that the same answers imported
            again are recognised without being parsed.
        captured_at: when answers that carry no capture time (REST answers) were
            fetched: the snapshot's "now" (default: *now*, right for a poller, not
            for a month-old folder). Refused for answers carrying their own time,
            and later than *now*.
        allocation_texts: a poller's allocation texts of its last checksum of the same
            source (:class:`~dashboard.services.snapshots.checksum.AllocationTexts`).
        warm_up: have the workers build the snapshot's engine state once it is stored
            (a poller passes False for a source polled often: its snapshot is replaced
            before anyone is likely to ask; the what-if page warms it when shown).

    Raises:
        ImportRejected: naming the file and key; UploadTooLarge.
    """
    now = now or utcnow()
    limits.check_names_given(partition=partition, cluster=cluster)
    names, subject = _refusal_names(files, cluster)
    if parsed is not None:
        _check_sizes(files, max_bytes)
    else:
        parsed = parse_answers(
            files, cluster=cluster, source_partition=source_partition, now=now, max_bytes=max_bytes
        )
    own = as_datetime(parsed.captured_at)
    if captured_at is not None and own is not None and captured_at != own:
        raise refused_import(
            ImportFailure(
                f"the answers carry their capture time ({own.isoformat()}); a capture "
                f"time ({captured_at.isoformat()}) is only for answers without one",
                "captured_at",
            ),
            names,
            subject,
            now,
        )
    if captured_at is not None and captured_at > now:
        raise refused_import(
            ImportFailure(
                f"the capture time {captured_at.isoformat()} is later than now ({now.isoformat()})",
                "captured_at",
            ),
            names,
            subject,
            now,
        )
    captured = own or captured_at or now
    try:
        with transaction.atomic():
            row = store_snapshot(
                partition_name=partition or parsed.partition or "default",
                cluster_name=cluster,
                cluster_id=parsed.cluster_id,
                source_kind=_source_kind(parsed.kind),
                captured_at=captured,
                scenario=parsed.scenario,
                asks=list(parsed.asks),
                applications=list(parsed.applications),
                queue_pending=_pending_by_queue(parsed.queue_usage),
                warnings=list(parsed.warnings),
                user=user,
                source_detail=(
                    f"{parsed.kind}: {names}"
                    if answers_digest is None
                    else with_answers_mark(f"{parsed.kind}: {names}", answers_digest)
                ),
                alert_warnings=alert_warnings,
                now=now,
                cluster=parsed.cluster,
                release_rows=True,
                allocation_texts=allocation_texts,
                warm_up=warm_up,
                scheduler_timers={
                    q: t.to_dict()
                    for q, t in read_scheduler_timers(
                        parsed.scenario,
                        parsed.observed,
                        rules_named(partition or parsed.partition or "default", cluster),
                    ).items()
                },
            )
            if parsed.observed is not None:
                record_observed(row.partition, parsed.observed, snapshot=row, now=now)
            if parsed.config is not None:
                # the config the scheduler ran at capture time, after its events
                store_answer_config(
                    row.partition, parsed.config, scheduler_partition=parsed.partition,
                    now=captured, alert_warnings=alert_warnings, user=user,
                )  # fmt: skip
            # a new scheduler instance: stored; at a restart the timers are re-armed
            # against the config and snapshot just stored
            note_scheduler_instance(
                row.partition,
                parsed.observed,
                now=now,
                start_time=served_start_time(files),
                snapshot=row,
            )
            if parsed.completed is not None:  # an uploaded folder's completed applications
                record_completed(row.partition, parsed.completed, now=now)
            return row
    except ImportRejected as exc:
        raise refused_import(ImportFailure(exc.message, exc.field), names, subject, now) from exc


def _pod_of(raw: Mapping[str, object]) -> str:
    """``namespace/name`` of an ask's pod (the importer's ``pod``, from the ask's tags)."""
    pod = raw.get("pod")
    return pod[:600] if type(pod) is str else ""


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
