"""The domain API: the only code touching both ORM rows and the engine.

One module per concept: ``snapshots`` (import and store), ``spans``
(nodes, applications, allocations stored once per run of snapshots), ``clusters`` (rows ->
engine values), ``configs`` (config versions), ``quota_settings``,
``quota_timers`` and ``quota_changes`` (what is in force, the delay timers,
scheduling), ``runs``, ``run_compute`` and ``run_execution`` (create, compute,
claim and finish preemption runs), ``sweep`` (due changes, stale runs),
``alerts`` and ``engine_views`` (read-only engine answers for the pages), ``plans``
(a proposed config planned against what is in force; keep, schedule, hand back).
Callers use ``from dashboard import services; services.name(...)``.
"""

from __future__ import annotations

from dashboard.services.alerts import (
    acknowledge_alert,
    acknowledge_all_alerts,
    raise_alert,
    unread_alerts,
)
from dashboard.services.applications import (
    application_view,
)
from dashboard.services.ask_explain import (
    explain_ask,
)
from dashboard.services.bulk import (
    insert_rows,
)
from dashboard.services.clock import (
    as_datetime,
    utcnow,
)
from dashboard.services.cluster_choice import (
    check_cluster_name,
    cluster_names,
    find_partition,
    import_cluster,
    named_cluster,
    partitions_named,
    scope_label,
)
from dashboard.services.clusters import (
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
from dashboard.services.configs import (
    ConfigImportResult,
    config_diff,
    export_config_yaml,
    import_config,
)
from dashboard.services.engine_views import (
    explain_run_victims,
    explain_victims,
    queue_preemptable,
)
from dashboard.services.errors import (
    IdempotencyConflict,
    ImportRejected,
    OverLimit,
    ServiceError,
    UploadTooLarge,
)
from dashboard.services.import_jobs import (
    async_import_bytes,
    queue_config_import,
    run_import_job,
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
from dashboard.services.observed import (
    agreement,
    compare,
    record_observed,
)
from dashboard.services.partitions import (
    latest_config,
    latest_snapshot,
)
from dashboard.services.plans import (
    DEFAULT_PARTITION,
    PlanHandback,
    ScheduledPlan,
    config_in_force,
    keep_planned_config,
    plan_proposed_config,
    planned_config_handback,
    schedule_planned_config,
)
from dashboard.services.quota_changes import (
    cancel_quota_change,
    schedule_quota_change,
)
from dashboard.services.quota_settings import (
    QueueSettings,
    check_max_above_guaranteed,
    queue_guaranteed,
    queue_settings,
    queue_usage,
    settings_by_queue,
)
from dashboard.services.quota_timers import (
    ChangeDecision,
    decide_change,
    exceeds,
    start_usage_timers,
)
from dashboard.services.run_compute import (
    compute_run,
)
from dashboard.services.run_csv import RUN_CSV_COLUMNS, csv_safe, run_csv_lines
from dashboard.services.run_execution import (
    claim_run,
    execute_run,
    finish_run,
)
from dashboard.services.run_wait import wait_for_run
from dashboard.services.runs import (
    create_run,
    enqueue_run,
    validate_run_request,
)
from dashboard.services.snapshot_facts import gang_allocations
from dashboard.services.snapshots import (
    import_snapshot,
    parse_answers,
    scenario_checksum,
    store_snapshot,
)
from dashboard.services.spans import (
    drop_unused_spans,
    snapshot_allocations,
    snapshot_applications,
    snapshot_nodes,
    stored_scenario,
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
    "application_view",
    "as_datetime",
    "ask_from_row",
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
    "queue_config_import",
    "queue_guaranteed",
    "queue_preemptable",
    "queue_settings",
    "queue_usage",
    "raise_alert",
    "record_observed",
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
    "snapshot_partition",
    "start_usage_timers",
    "store_snapshot",
    "stored_scenario",
    "sweep_due_changes",
    "unread_alerts",
    "utcnow",
    "validate_resource",
    "validate_run_request",
    "wait_for_run",
    "warm_engine_state",
]
