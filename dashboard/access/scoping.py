"""The queue ACLs applied to stored rows: which rows of which queues a user may read,
and the refusal of a write on a queue the user does not administer.

Rows name a queue by its path in a partition (a run's ``queue``, a change's
``queue_path``, an alert's ``queue``).  A queue's permission is inherited by every
queue below it, configured or dynamic, so what a user may view in a partition is the
subtrees of the topmost queues whose ACLs grant it (:func:`granted_roots`); a row
filter is one ``queue = root OR queue LIKE 'root.%'`` per such queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet

from dashboard import models
from dashboard.access.acl import RECOVERY_QUEUE
from dashboard.access.grants import VIEW_EVERY_QUEUE, Access, access_for

M = TypeVar("M", bound=Model)


class QueueAccessDenied(PermissionDenied):
    """A write on queues the user does not administer (or a read of one it may not
    view); the message names only queues the user may view."""


#: a path no queue has (a dot ends no queue name): what an unknown ask key's queue is
#: checked as, so that it is refused as one of a queue the user cannot view
UNKNOWN_QUEUE = "root.."


def granted_roots(access: Access, *, administer: bool = False) -> list[str]:
    """The topmost configured queues whose ACLs grant *access*'s user viewing (or
    administering): everything the user may view (administer) lies in their subtrees."""
    check = access.may_administer if administer else access.may_view
    roots: list[str] = []
    for path in access.tree.paths():  # sorted: a parent before its children
        if any(path.startswith(r + ".") for r in roots):
            continue
        if check(path):
            roots.append(path)
    return roots


def _subtree_q(field: str, roots: Iterable[str]) -> Q:
    q = Q(pk__in=[])
    for root in roots:
        q |= Q(**{field: root}) | Q(**{f"{field}__startswith": root + "."})
    return q


def is_tenant(user: Any) -> bool:
    """Whether the queue ACLs restrict what *user* reads (not staff, no reader of all).

    No query but the user's permissions, which Django keeps on the user object.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return True
    return not (getattr(user, "is_staff", False) or user.has_perm(VIEW_EVERY_QUEUE))


def viewable_q(user: Any, queue_field: str, partition_field: str = "partition") -> Q | None:
    """The rows *user* may read, as a filter on *queue_field* within *partition_field*;
    None when the user reads everything."""
    if not is_tenant(user):
        return None
    q = Q(pk__in=[])
    for partition in models.Partition.objects.select_related("cluster"):
        roots = granted_roots(access_for(user, partition))
        if roots:
            q |= Q(**{partition_field: partition}) & _subtree_q(queue_field, roots)
    # the recovery queue never passes the submit check, whatever root grants
    return q & ~Q(**{queue_field: RECOVERY_QUEUE})


def administers_any_queue(user: Any) -> bool:
    """Whether the ACLs of some partition's config in force let *user* administer a queue
    (staff always)."""
    if getattr(user, "is_staff", False):
        return True
    return any(
        granted_roots(access_for(user, p), administer=True) for p in models.Partition.objects.all()
    )


def views_any_queue(user: Any) -> bool:
    """Whether the ACLs of some partition's config in force let *user* view a queue
    (staff always; a reader of every queue only through the ACLs, not its permission)."""
    if getattr(user, "is_staff", False):
        return True
    for partition in models.Partition.objects.all():
        access = access_for(user, partition)
        if any(access.view_grant(path) is not None for path in access.tree.paths()):
            return True
    return False


def read_scope_key(user: Any) -> tuple[object, ...]:
    """What decides the rows *user* reads: empty for users who read everything, else
    each partition's config version in force and the queues it grants the user."""
    if not is_tenant(user):
        return ()
    out: list[object] = []
    for partition in models.Partition.objects.order_by("pk"):
        access = access_for(user, partition)
        version = access.version.pk if access.version is not None else None
        out.append((partition.pk, version, tuple(granted_roots(access))))
    return tuple(out)


def filter_viewable(
    rows: QuerySet[M], user: Any, queue_field: str, partition_field: str = "partition"
) -> QuerySet[M]:
    """*rows* less those of queues *user* may not view."""
    q = viewable_q(user, queue_field, partition_field)
    return rows if q is None else rows.filter(q)


def filter_viewable_runs(
    runs: QuerySet[models.PreemptionRun], user: Any
) -> QuerySet[models.PreemptionRun]:
    """Runs of queues the user may view; their victims in queues it may not view are
    shown without names (:mod:`dashboard.access.redaction`)."""
    q = viewable_q(user, "queue")
    return runs if q is None else runs.filter(q)


def may_view_run(user: Any, run: models.PreemptionRun) -> bool:
    """Whether *user* reads *run*: a run of a queue it may view (its victims in other
    queues shown without names)."""
    return access_for(user, run.partition).may_view(run.queue)


def require_view(user: Any, partition: models.Partition, path: str) -> Access:
    """*user*'s access, or :class:`QueueAccessDenied` when it may not view *path*."""
    access = access_for(user, partition)
    if not access.may_view(path):
        raise QueueAccessDenied("You may not view this queue.")
    return access


def require_administer(user: Any, partition: models.Partition, paths: Iterable[str]) -> None:
    """Refuse (:class:`QueueAccessDenied`) a write touching a queue of *paths* that
    *user* does not administer, naming those of them the user may view."""
    if user is None or not getattr(user, "is_authenticated", False):
        return  # the system's own writes (sweeps, polls, tasks) name no user
    access = access_for(user, partition)
    refused = access.not_administered(paths)
    if not refused:
        return
    named = [p for p in refused if p != UNKNOWN_QUEUE and access.may_view(p)]
    others = len(refused) - len(named)
    parts = []
    if named:
        parts.append(", ".join(named))
    if others:
        parts.append(f"{others} queue{'s' if others != 1 else ''} you cannot view")
    raise QueueAccessDenied(
        f"You do not administer {' and '.join(parts)} ({access.version_label()} in force): "
        "only queues whose adminacl names you, one of your groups or '*' may be changed."
    )
