"""REST API views by resource: declarative reads, writes through ``dashboard.services``.

Staff read and write everything; other users what the queue ACLs of the config in
force grant them (``dashboard.access.api.QueueAclPermission``, the default).
Service errors become 400 bodies naming the field (see ``exceptions``). The
filtersets are in :mod:`dashboard.api.filtersets`, the answer caches in
:mod:`dashboard.api.caches`; every view is named here for ``dashboard.api.urls``.
"""

from __future__ import annotations

from dashboard.api.views.alerts import AlertViewSet
from dashboard.api.views.auth import ObtainAuthToken
from dashboard.api.views.clusters import ClusterViewSet, PartitionViewSet
from dashboard.api.views.configs import ConfigVersionViewSet, ImportJobViewSet
from dashboard.api.views.notfound import ApiNotFound
from dashboard.api.views.quota_changes import QuotaChangeViewSet
from dashboard.api.views.runs import RoundViewSet, RunViewSet, WhatIfViewSet
from dashboard.api.views.snapshots import SnapshotViewSet

__all__ = [
    "AlertViewSet",
    "ApiNotFound",
    "ClusterViewSet",
    "ConfigVersionViewSet",
    "ImportJobViewSet",
    "ObtainAuthToken",
    "PartitionViewSet",
    "QuotaChangeViewSet",
    "RoundViewSet",
    "RunViewSet",
    "SnapshotViewSet",
    "WhatIfViewSet",
]
