"""The pages under the queue ACLs: one middleware lets a user the ACLs restrict (a
*tenant*: not staff, no ``view_every_queue``) reach only the pages that show queues it
may view; every other page answers it 403, naming nothing of another tenant.

- open to every signed-in user: sign-in and out, home, the single sign-on views and
  "Your permissions" (``/access/``);
- narrowed to the user's queues (:data:`NARROWED`): the queue tree (other queues as
  their share of the parent, :mod:`dashboard.pages.tenant_tree`), the history, the
  changes, the alerts and the work lost, with their CSVs (a user the ACLs grant no
  queue at all gets the 403 there too: there is nothing of its own to show);
- one queue's pages (``?queue=``): the queue must be one the user may view in the
  scope's partition;
- one run's or one quota change's page: its queue must be viewable (a run's victims
  in queues the user cannot view shown as their place and resources, no names);
  editing or cancelling a change: its queue administered;
- scheduling a change (:data:`WRITES`): a user administering some queue (the service
  refuses a queue it does not administer);
- what-ifs (:data:`WRITES`): a user administering some queue, on its own asks and
  queues; a run it may view shown redacted;
- the plan page (:data:`WRITES`): a user administering some queue plans there (the
  answer redacted, :mod:`dashboard.pages.views.plans`); keeping, handing back and
  scheduling stay with staff;
- anything else (configs, imports, nodes, alert routes): staff and readers of every
  queue only.  Tenants route alerts through the API (:mod:`dashboard.access.api`).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from dashboard import models
from dashboard.access import scoping
from dashboard.access.grants import access_for

OPEN = frozenset(
    {
        "home",
        "login",
        "logout",
        "access",
        "oidc_authentication_init",
        "oidc_authentication_callback",
    }
)
ONE_QUEUE = frozenset({"queue", "victims", "queue_over_time"})
#: pages whose rows are narrowed to the queues the user may view (the tree's bars: a
#: box of the tenant's tree only, :mod:`dashboard.pages.tenant_tree`)
NARROWED = frozenset(
    {
        "tree",
        "tree_bars",
        "work_lost",
        "work_lost_csv",
        "history",
        "history_csv",
        "changes",
        "alerts",
    }
)
#: pages that change queues or ask the engine: open to a user administering any queue,
#: whose services refuse a queue it does not administer (the what-if page lists only
#: the asks and queues it administers, its answers redacted as a run's page)
WRITES = frozenset({"change_create", "whatif", "whatif_answer", "plan"})
DENIED = "This page needs a staff user or permission from the queue ACLs."


def _queue_page(request: HttpRequest) -> bool:
    from dashboard.pages import scope as scope_mod

    scope = scope_mod.resolve(request)
    queue = request.GET.get("queue", "")
    return (
        scope.partition is not None
        and bool(queue)
        and access_for(request.user, scope.partition).may_view(queue)
    )


def _run_page(request: HttpRequest, pk: int) -> bool:
    run = models.PreemptionRun.objects.select_related("partition").filter(pk=pk).first()
    # its victims in queues the user cannot view are shown without names
    # (dashboard.pages.views.run_redaction)
    return run is not None and scoping.may_view_run(request.user, run)


def _change_page(request: HttpRequest, pk: int) -> bool:
    change = models.QuotaChange.objects.select_related("partition").filter(pk=pk).first()
    return change is not None and access_for(request.user, change.partition).may_view(
        change.queue_path
    )


def _administered_change(request: HttpRequest, pk: int) -> bool:
    change = models.QuotaChange.objects.select_related("partition").filter(pk=pk).first()
    return change is not None and access_for(request.user, change.partition).may_administer(
        change.queue_path
    )


ONE_ROW: dict[str, Callable[[HttpRequest, int], bool]] = {
    "run": _run_page,
    "run_wait": _run_page,
    "change": _change_page,
    "change_edit": _administered_change,
    "change_cancel": _administered_change,
}


class TenantPageMiddleware:
    """403 for a tenant on a page that is not one of its queues' (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if (
            user is not None
            and user.is_authenticated
            and not user.is_staff
            and not request.path.startswith(("/api/", "/static/", "/admin/"))
            and scoping.is_tenant(user)
        ):
            self._check(request)
        return self.get_response(request)

    def _check(self, request: HttpRequest) -> None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return  # the 404 page names nothing
        name = match.url_name or ""
        if name in OPEN:
            return
        if name in NARROWED and scoping.views_any_queue(request.user):
            return  # a user the ACLs grant nothing is told so, not shown an empty page
        if name in WRITES and scoping.administers_any_queue(request.user):
            return
        if name in ONE_QUEUE and _queue_page(request):
            return
        row = ONE_ROW.get(name)
        if row is not None and row(request, int(match.kwargs.get("pk", 0))):
            return
        raise PermissionDenied(DENIED)
