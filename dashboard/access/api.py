"""The API's permissions: staff do everything; anybody else reads and writes what the
queue ACLs of the config in force grant (:mod:`dashboard.access.grants`).

One permission class (``DEFAULT_PERMISSION_CLASSES``) and one filter backend
(``DEFAULT_FILTER_BACKENDS``) apply the rules to every view from this module's tables,
so a view needs no code of its own:

- :data:`TENANT_READS`: the views a user restricted by the ACLs (a *tenant*) may read,
  and how their rows are narrowed to the queues it may view (lists and CSVs filtered,
  a single row of another queue refused with 403).  Any other view answers a tenant
  403 unless it narrows its answer itself (:data:`TENANT_SELF_FILTERED`) or holds the
  user's own rows (:data:`OWN_ROWS`): snapshots, configs, imports and sources span
  every tenant's queues and stay with staff and readers of every queue.
- :data:`TENANT_WRITES`: the actions a non-staff user may call; the services refuse
  a queue it does not administer (:func:`dashboard.access.scoping.require_administer`).

Users with the ``dashboard.view_every_queue`` permission read every view, as all
signed-in users did before the ACLs applied; writes stay with staff and
administrators.  Every refusal is a 403 naming nothing of another tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db.models import Model, QuerySet
from rest_framework.filters import BaseFilterBackend
from rest_framework.permissions import SAFE_METHODS, BasePermission

from dashboard import models
from dashboard.access import scoping
from dashboard.access.grants import access_for

if TYPE_CHECKING:  # DRF loads this module while rest_framework.views is half imported
    from rest_framework.request import Request
    from rest_framework.views import APIView

RowFilter = Callable[[QuerySet[Any], Any], QuerySet[Any]]
RowCheck = Callable[[Any, Any], bool]


def _by_queue(field: str) -> tuple[RowFilter, RowCheck]:
    def rows(qs: QuerySet[Any], user: Any) -> QuerySet[Any]:
        return scoping.filter_viewable(qs, user, field)

    def row(user: Any, obj: Any) -> bool:
        path = getattr(obj, field) or ""
        return bool(path) and access_for(user, obj.partition).may_view(path)

    return rows, row


def _everything(qs: QuerySet[Any], user: Any) -> QuerySet[Any]:
    return qs


def _any_row(user: Any, obj: Any) -> bool:
    return True


def _runs(qs: QuerySet[Any], user: Any) -> QuerySet[Any]:
    return scoping.filter_viewable_runs(qs, user)


def _run(user: Any, obj: Any) -> bool:
    return scoping.may_view_run(user, obj)


def _queue_param(user: Any, request: Request) -> bool:
    from dashboard.services.scope.cluster_choice import find_partition

    params = request.query_params
    try:
        partition = find_partition(params.get("partition") or "default", params.get("cluster"))
    except models.AmbiguousCluster:
        return False
    queue = params.get("queue") or ""
    return partition is not None and bool(queue) and access_for(user, partition).may_view(queue)


_VIEWS = "dashboard.api.views"
#: view class (module.qualname) -> (list filter, row check), for tenants
TENANT_READS: dict[str, tuple[RowFilter, RowCheck]] = {
    f"{_VIEWS}.clusters.ClusterViewSet": (_everything, _any_row),
    f"{_VIEWS}.clusters.PartitionViewSet": (_everything, _any_row),
    f"{_VIEWS}.runs.RunViewSet": (_runs, _run),
    f"{_VIEWS}.runs.RoundViewSet": (_runs, _run),
    f"{_VIEWS}.alerts.AlertViewSet": _by_queue("queue"),
    f"{_VIEWS}.quota_changes.QuotaChangeViewSet": _by_queue("queue_path"),
}
#: views a tenant reads when the request's ``queue`` parameter is a queue it may view
TENANT_QUERY_READS: dict[str, Callable[[Any, Request], bool]] = {
    "dashboard.api.overtime.QueueOverTimeViewSet": _queue_param,
}
#: views that narrow their answer to the requesting user's queues themselves (a
#: service given ``user``), which a tenant therefore reads
TENANT_SELF_FILTERED = frozenset({"dashboard.api.worklost.WorkLostView"})
#: view class -> actions a non-staff user may call (the services check the queues)
TENANT_WRITES: dict[str, frozenset[str]] = {
    f"{_VIEWS}.quota_changes.QuotaChangeViewSet": frozenset(
        {"create", "partial_update", "update", "cancel"}
    ),
    f"{_VIEWS}.runs.WhatIfViewSet": frozenset({"preempt", "quota"}),
    # keeping a planned config version (the whole partition's) stays with staff
    "dashboard.api.plans.PlanViewSet": frozenset({"create", "handback", "schedule"}),
}
#: views any signed-in user may call whatever the ACLs (their own account)
OPEN_VIEWS = frozenset({"dashboard.api.views.auth.ObtainAuthToken"})
#: views of rows a non-staff user owns (its alert routes and their deliveries): it reads
#: and changes only its own (the views narrow their rows to them), and the deliveries
#: carry only alerts of queues the ACLs let it view (dashboard.alerting.delivery)
OWN_ROWS = frozenset(
    {
        "dashboard.alerting.api.AlertRouteViewSet",
        "dashboard.alerting.api.AlertDeliveryViewSet",
    }
)


def owner_of(obj: Any) -> int | None:
    """The id of the user owning an alert route or a delivery over one (None: staff's)."""
    route = getattr(obj, "route", None) if not hasattr(obj, "owner_id") else obj
    return getattr(route, "owner_id", None)


DENIED = "Not permitted: this needs a staff user or permission from the queue ACLs."


def view_name(view: APIView) -> str:
    cls = type(view)
    return f"{cls.__module__}.{cls.__qualname__}"


class QueueAclPermission(BasePermission):
    """Staff: everything.  Others: the tenant tables above (reads), the ACL-checked
    writes, and (with ``view_every_queue``) every read."""

    message = DENIED

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if user.is_staff:
            return True
        name = view_name(view)
        if name in OPEN_VIEWS:
            return True
        if name in OWN_ROWS:  # routes of queues the ACLs let the user view
            return scoping.views_any_queue(user)
        if request.method not in SAFE_METHODS:
            # a write of a user who administers no queue at all: refused before its body
            # is read; the services check the queues it names
            allowed = getattr(view, "action", None) in TENANT_WRITES.get(name, frozenset())
            return allowed and scoping.administers_any_queue(user)
        if not scoping.is_tenant(user):
            return True
        if name in TENANT_READS or name in TENANT_SELF_FILTERED:
            return True
        check = TENANT_QUERY_READS.get(name)
        return check is not None and check(user, request)

    def has_object_permission(self, request: Request, view: APIView, obj: Model) -> bool:
        user = request.user
        if user.is_staff:
            return True
        if view_name(view) in OWN_ROWS:
            return owner_of(obj) == user.pk
        if request.method not in SAFE_METHODS:  # a change of a row: its queue administered
            queue = getattr(obj, "queue_path", None) or getattr(obj, "queue", None)
            partition = getattr(obj, "partition", None)
            return bool(queue) and access_for(user, partition).may_administer(str(queue))
        if not scoping.is_tenant(user):
            return True
        reads = TENANT_READS.get(view_name(view))
        return reads is not None and reads[1](user, obj)


class QueueAclFilter(BaseFilterBackend):
    """Lists and CSVs of a tenant hold only rows of queues it may view."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: APIView) -> Any:
        user = request.user
        if not getattr(user, "is_authenticated", False) or user.is_staff:
            return queryset
        if getattr(view, "detail", False):  # a single row: 403 by the permission, not 404
            return queryset
        reads = TENANT_READS.get(view_name(view))
        if reads is None or not scoping.is_tenant(user):
            return queryset
        return reads[0](queryset, user)
