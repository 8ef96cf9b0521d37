"""The domain API: the only code touching both ORM rows and the engine.

Sub-packages by concept: ``scope`` (which cluster and partition; the latest
snapshot and config), ``snapshots`` (import and store; nodes, applications and
allocations stored once per span of snapshots; the scheduler's own facts),
``configs`` (config versions, the scheduler's config in force, import jobs,
rollout plans), ``quota`` (settings in force, changes, delay timers, deadlines,
the scheduler's clock, restarts), ``runs`` (request, compute, execute, wait, CSV,
observed runs) and ``explain`` (why an ask, preemptable, victim reasons, one
application); beside them ``engine_state_cache`` (stored rows -> the engine's
values, built once per snapshot and process), ``alerts`` (the feed), ``limits``
(input limits) and ``sweep`` (due changes, stale runs).  Plumbing with no domain
concept (clock, errors, users, bulk inserts) is in :mod:`dashboard.plumbing`;
its public names are re-exported here too.
Callers use ``from dashboard import services; services.name(...)``.
"""

from __future__ import annotations

from dashboard.plumbing.bulk import (
    insert_rows,
)
from dashboard.plumbing.clock import (
    as_datetime,
    utcnow,
)
from dashboard.plumbing.errors import (
    IdempotencyConflict,
    ImportRejected,
    OverLimit,
    ServiceError,
    UploadTooLarge,
)
from dashboard.services.alerts import (
    acknowledge_alert,
    acknowledge_all_alerts,
    raise_alert,
    unread_alerts,
)
from dashboard.services.configs.editable import editable_text as editable_config_text
from dashboard.services.configs.import_jobs import (
    async_import_bytes,
    queue_config_import,
    run_import_job,
)
from dashboard.services.configs.plans import (
    DEFAULT_PARTITION,
    PlanHandback,
    ScheduledPlan,
    config_in_force,
    keep_planned_config,
    plan_proposed_config,
    planned_config_handback,
    schedule_planned_config,
)
from dashboard.services.configs.versions import (
    ConfigImportResult,
    config_diff,
    export_config_yaml,
    import_config,
)
from dashboard.services.engine_state_cache import (
    EngineState,
    ask_from_row,
    cluster_from_snapshot,
    engine_state,
    export_request,
    is_engine_state_cached,
    scenario_document,
    snapshot_now,
    snapshot_partition,
    warm_engine_state,
)
from dashboard.services.explain.application import (
    application_view,
)
from dashboard.services.explain.ask import (
    explain_ask,
)
from dashboard.services.explain.preemption import (
    explain_run_victims,
    explain_victims,
    queue_preemptable,
)
from dashboard.services.limits import (
    MAX_DELAY_SECONDS,
    check_config_size,
    check_snapshot_queues,
    check_upload_size,
    checked_delay,
    delay_seconds,
    validate_resource,
)
from dashboard.services.quota.changes import (
    cancel_quota_change,
    preview_quota_change,
    schedule_quota_change,
)
from dashboard.services.quota.queue_settings import (
    QueueSettings,
    allocated_usage,
    check_max_above_guaranteed,
    queue_guaranteed,
    queue_settings,
    row_timer_usage,
    settings_by_queue,
    timer_usage,
)
from dashboard.services.quota.timers import (
    ChangeDecision,
    decide_change,
    exceeds,
    start_usage_timers,
)
from dashboard.services.runs.compute import (
    compute_run,
)
from dashboard.services.runs.csv_export import (
    RUN_CSV_COLUMNS,
    ask_pods,
    csv_safe,
    run_ask_keys,
    run_csv_lines,
)
from dashboard.services.runs.execution import (
    claim_run,
    execute_run,
    finish_run,
)
from dashboard.services.runs.observed import (
    agreement,
    compare,
    record_observed,
)
from dashboard.services.runs.requests import (
    create_run,
    enqueue_run,
    validate_run_request,
)
from dashboard.services.runs.wait import wait_for_run
from dashboard.services.scope.cluster_choice import (
    check_cluster_name,
    cluster_names,
    find_partition,
    import_cluster,
    named_cluster,
    partitions_named,
    scope_label,
)
from dashboard.services.scope.latest import (
    latest_config,
    latest_snapshot,
)
from dashboard.services.snapshots.already_imported import answers_digest_of, snapshot_of_answers
from dashboard.services.snapshots.checksum import scenario_checksum
from dashboard.services.snapshots.facts import gang_allocations
from dashboard.services.snapshots.names import AllocationName, allocation_names
from dashboard.services.snapshots.spans import (
    drop_unused_spans,
    snapshot_allocations,
    snapshot_applications,
    snapshot_nodes,
    stored_scenario,
)
from dashboard.services.snapshots.store import (
    import_snapshot,
    parse_answers,
    store_snapshot,
    warm_up_workers,
)
from dashboard.services.sweep import (
    SweepReport,
    claim_change,
    sweep_due_changes,
)

__all__ = [
    "DEFAULT_PARTITION",
    "MAX_DELAY_SECONDS",
    "RUN_CSV_COLUMNS",
    "AllocationName",
    "ChangeDecision",
    "ConfigImportResult",
    "EngineState",
    "IdempotencyConflict",
    "ImportRejected",
    "OverLimit",
    "PlanHandback",
    "QueueSettings",
    "ScheduledPlan",
    "ServiceError",
    "SweepReport",
    "UploadTooLarge",
    "acknowledge_alert",
    "acknowledge_all_alerts",
    "agreement",
    "allocated_usage",
    "allocation_names",
    "answers_digest_of",
    "application_view",
    "as_datetime",
    "ask_from_row",
    "ask_pods",
    "async_import_bytes",
    "cancel_quota_change",
    "check_cluster_name",
    "check_config_size",
    "check_max_above_guaranteed",
    "check_snapshot_queues",
    "check_upload_size",
    "checked_delay",
    "claim_change",
    "claim_run",
    "cluster_from_snapshot",
    "cluster_names",
    "compare",
    "compute_run",
    "config_diff",
    "config_in_force",
    "create_run",
    "csv_safe",
    "decide_change",
    "delay_seconds",
    "drop_unused_spans",
    "editable_config_text",
    "engine_state",
    "enqueue_run",
    "exceeds",
    "execute_run",
    "explain_ask",
    "explain_run_victims",
    "explain_victims",
    "export_config_yaml",
    "export_request",
    "find_partition",
    "finish_run",
    "gang_allocations",
    "import_cluster",
    "import_config",
    "import_snapshot",
    "insert_rows",
    "is_engine_state_cached",
    "keep_planned_config",
    "latest_config",
    "latest_snapshot",
    "named_cluster",
    "parse_answers",
    "partitions_named",
    "plan_proposed_config",
    "planned_config_handback",
    "preview_quota_change",
    "queue_config_import",
    "queue_guaranteed",
    "queue_preemptable",
    "queue_settings",
    "raise_alert",
    "record_observed",
    "row_timer_usage",
    "run_ask_keys",
    "run_csv_lines",
    "run_import_job",
    "scenario_checksum",
    "scenario_document",
    "schedule_planned_config",
    "schedule_quota_change",
    "scope_label",
    "settings_by_queue",
    "snapshot_allocations",
    "snapshot_applications",
    "snapshot_nodes",
    "snapshot_now",
    "snapshot_of_answers",
    "snapshot_partition",
    "start_usage_timers",
    "store_snapshot",
    "stored_scenario",
    "sweep_due_changes",
    "timer_usage",
    "unread_alerts",
    "utcnow",
    "validate_resource",
    "validate_run_request",
    "wait_for_run",
    "warm_engine_state",
    "warm_up_workers",
]
