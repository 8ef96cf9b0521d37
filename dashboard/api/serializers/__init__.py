"""API serializers by resource: read shapes of the stored rows and the input shapes of
the writes.

Writes are validated here only for shape; the services validate meaning (known
queue, resource quantities, timer rules) and name the offending field.  Every
serializer is named here too (``from dashboard.api import serializers as s``).
"""

from __future__ import annotations

from dashboard.api.serializers.alerts import AlertSerializer, UnreadCountSerializer
from dashboard.api.serializers.clusters import (
    ClusterSerializer,
    PartitionSerializer,
    TimerRulesSerializer,
)
from dashboard.api.serializers.configs import (
    ConfigChangeSerializer,
    ConfigImportResultSerializer,
    ConfigQueueSerializer,
    ConfigUploadSerializer,
    ConfigVersionDetailSerializer,
    ConfigVersionSerializer,
    ImportJobSerializer,
)
from dashboard.api.serializers.fields import (
    RESOURCE_SCHEMA,
    AnyValueField,
    DelayField,
    ResourceField,
    parse_delay,
)
from dashboard.api.serializers.quota_changes import (
    QuotaChangeEditSerializer,
    QuotaChangeInputSerializer,
    QuotaChangeSerializer,
)
from dashboard.api.serializers.runs import (
    RoundInputSerializer,
    RunComparisonSerializer,
    RunDetailSerializer,
    RunSerializer,
    RunVictimSerializer,
    WhatIfPreemptSerializer,
    WhatIfQuotaSerializer,
)
from dashboard.api.serializers.snapshots import (
    PendingAskSerializer,
    SnapshotAllocationSerializer,
    SnapshotApplicationSerializer,
    SnapshotNodeSerializer,
    SnapshotQueueSerializer,
    SnapshotSerializer,
    SnapshotUploadSerializer,
)

__all__ = [
    "RESOURCE_SCHEMA",
    "AlertSerializer",
    "AnyValueField",
    "ClusterSerializer",
    "ConfigChangeSerializer",
    "ConfigImportResultSerializer",
    "ConfigQueueSerializer",
    "ConfigUploadSerializer",
    "ConfigVersionDetailSerializer",
    "ConfigVersionSerializer",
    "DelayField",
    "ImportJobSerializer",
    "PartitionSerializer",
    "PendingAskSerializer",
    "QuotaChangeEditSerializer",
    "QuotaChangeInputSerializer",
    "QuotaChangeSerializer",
    "ResourceField",
    "RoundInputSerializer",
    "RunComparisonSerializer",
    "RunDetailSerializer",
    "RunSerializer",
    "RunVictimSerializer",
    "SnapshotAllocationSerializer",
    "SnapshotApplicationSerializer",
    "SnapshotNodeSerializer",
    "SnapshotQueueSerializer",
    "SnapshotSerializer",
    "SnapshotUploadSerializer",
    "TimerRulesSerializer",
    "UnreadCountSerializer",
    "WhatIfPreemptSerializer",
    "WhatIfQuotaSerializer",
    "parse_delay",
]
