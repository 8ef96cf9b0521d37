"""The dashboard's stored state: imports, snapshots, quota changes, runs, alerts.

Resources are JSON objects ``{type: int}`` exactly as in the scenario format
(``null`` = not set, which is not the same as ``{}`` for max: see the seeds).
Database constraints guard what must hold under races: one active quota change
per queue, one running quota preemption per queue, unique keys per snapshot,
unique idempotency keys.

One module per stored concept; every model is imported here, so
``from dashboard.models import X`` names any of them:

- ``clusters``: ``Cluster`` and its ``Partition``\\ s (what everything else belongs to)
- ``configs``: ``ConfigVersion`` (one per config import) and its ``ConfigQueue``\\ s
- ``snapshots``: ``ClusterSnapshot``, ``SnapshotQueue``, ``SnapshotPreemptable``,
  ``PendingAsk``
- ``spans``: ``NodeSpan``, ``ApplicationSpan``, ``AllocationSpan`` (stored once per
  span of snapshots)
- ``runs``: ``PreemptionRun`` and its ``RunVictim``\\ s
- ``quota_changes``: ``QuotaChange`` and the scheduler's ``ObservedMaxChange``
- ``alerts``: ``Alert``; ``alerting``: ``AlertRoute`` and ``AlertDelivery`` (where alerts go)
- ``import_jobs``: ``ImportJob``
- ``scheduler_starts``: ``SchedulerStart`` (restarts)
- ``identities``: ``SignInIdentity`` (the identity provider's account of a user)
"""

from __future__ import annotations

from dashboard.models.alerting import AlertDelivery, AlertRoute
from dashboard.models.alerts import Alert
from dashboard.models.clusters import (
    DEFAULT_CLUSTER,
    AmbiguousCluster,
    Cluster,
    ClusterManager,
    Partition,
)
from dashboard.models.completed_applications import CompletedApplication
from dashboard.models.configs import ConfigQueue, ConfigVersion
from dashboard.models.identities import SignInIdentity
from dashboard.models.import_jobs import ImportJob
from dashboard.models.quota_changes import ObservedMaxChange, QuotaChange
from dashboard.models.runs import (
    NATURE_OTHERWISE,
    NATURE_RULE,
    PreemptionRun,
    PreemptionRunQuerySet,
    RunVictim,
    nature_of,
    nature_q,
)
from dashboard.models.scheduler_starts import SchedulerStart
from dashboard.models.snapshots import (
    ClusterSnapshot,
    PendingAsk,
    SnapshotPreemptable,
    SnapshotQueue,
)
from dashboard.models.spans import AllocationSpan, ApplicationSpan, NodeSpan, Span

# isort: split
# Models of their own modules, in this app (migrations 0019 and 0034).
from dashboard.metrics.models import (
    AgreementTally,
    ObservedAgreement,
    PreemptionTally,
    RunLatencyTally,
    SourcePollStats,
)

__all__ = [
    "DEFAULT_CLUSTER",
    "NATURE_OTHERWISE",
    "NATURE_RULE",
    "AgreementTally",
    "Alert",
    "AlertDelivery",
    "AlertRoute",
    "AllocationSpan",
    "AmbiguousCluster",
    "ApplicationSpan",
    "Cluster",
    "ClusterManager",
    "ClusterSnapshot",
    "CompletedApplication",
    "ConfigQueue",
    "ConfigVersion",
    "ImportJob",
    "NodeSpan",
    "ObservedAgreement",
    "ObservedMaxChange",
    "Partition",
    "PendingAsk",
    "PreemptionRun",
    "PreemptionRunQuerySet",
    "PreemptionTally",
    "QuotaChange",
    "RunLatencyTally",
    "RunVictim",
    "SchedulerStart",
    "SignInIdentity",
    "SnapshotPreemptable",
    "SnapshotQueue",
    "SourcePollStats",
    "Span",
    "nature_of",
    "nature_q",
]
