"""Who may view and administer which queue: the queue ACLs of the partition's config in
force (:mod:`dashboard.access.acl`), for a dashboard user.

- Staff see and do everything.
- A user with the ``dashboard.view_every_queue`` permission reads every queue (the
  old "viewer" role) and administers what the ACLs grant.
- Anybody else is YuniKorn's user of the same name, in the groups its sign-in
  brought (:class:`~dashboard.models.SignInIdentity`) or, for a local account, its
  Django groups; it views and administers what the ACLs of the config in force grant.

The config in force is the partition's newest non-planned config version
(:func:`dashboard.services.scope.latest.latest_config`); its ACL tree is parsed once
per version (versions never change), so a new version changes the permissions at the
next request.  A partition without any config grants nothing but to staff and readers
of every queue: the scheduler's own ACLs are not known.

The services import this module and it reads the config through them: it imports them
where it reads, so that either may be imported first (a process no longer imports the
services when Django starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dashboard import models
from dashboard.access.acl import AclTree, Grant, QueueAcls, queue_acls

VIEW_EVERY_QUEUE = "dashboard.view_every_queue"


@dataclass(frozen=True, slots=True)
class Identity:
    """The user and groups YuniKorn's ACLs are checked against."""

    user: str
    groups: tuple[str, ...]


def identity_of(user: Any) -> Identity:
    """A dashboard user as YuniKorn sees it: its user name, and its identity provider's
    groups (signed in through it) or else its Django groups."""
    try:
        signin = user.signin_identity
    except models.SignInIdentity.DoesNotExist:
        signin = None
    if signin is not None:
        groups = tuple(sorted(str(g) for g in signin.groups or ()))
    else:
        groups = tuple(sorted(user.groups.values_list("name", flat=True)))
    return Identity(str(user.get_username()), groups)


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(item.get("children") or ())


def acl_tree_of(parsed: dict[str, Any]) -> AclTree:
    """The ACL tree of a stored config version's ``parsed`` document."""
    queues: dict[str, QueueAcls] = {}
    root = parsed.get("root")
    if isinstance(root, dict):
        for node in _walk(root):
            raw = node.get("raw") or {}
            admin, submit = raw.get("adminacl"), raw.get("submitacl")
            queues[str(node.get("path", ""))] = queue_acls(
                admin if isinstance(admin, str) else None,
                submit if isinstance(submit, str) else None,
            )
    return AclTree(queues)


@lru_cache(maxsize=64)
def _tree_of_version(version_id: int, checksum: str) -> AclTree:
    # Keyed on the text's checksum as well as the id: an id alone can name another
    # version after a restore or a sequence reset, and the ACLs must be that version's.
    parsed = models.ConfigVersion.objects.values_list("parsed", flat=True).get(pk=version_id)
    return acl_tree_of(parsed or {})


@dataclass(frozen=True)
class Access:
    """One user's permissions on one partition, from one config version."""

    partition: models.Partition | None
    identity: Identity
    staff: bool = False
    reads_everything: bool = False
    #: the config version in force whose ACLs decide, or None (none imported)
    version: models.ConfigVersion | None = None
    tree: AclTree = field(default_factory=lambda: AclTree({}))

    @property
    def is_tenant(self) -> bool:
        """Whether the ACLs restrict what this user sees (not staff, no reader of all)."""
        return not (self.staff or self.reads_everything)

    def may_administer(self, path: str) -> bool:
        return self.staff or self.tree.may_administer(path, *self._who())

    def may_view(self, path: str) -> bool:
        if self.staff or self.reads_everything:
            return True
        return self.tree.may_view(path, *self._who())

    def admin_grant(self, path: str) -> Grant | None:
        return self.tree.admin_grant(path, *self._who())

    def view_grant(self, path: str) -> Grant | None:
        return self.tree.view_grant(path, *self._who())

    def _who(self) -> tuple[str, tuple[str, ...]]:
        return self.identity.user, self.identity.groups

    def not_administered(self, paths: Iterable[str]) -> list[str]:
        """Those of *paths* this user may not administer, in order, once each."""
        out: list[str] = []
        for p in paths:
            if p not in out and not self.may_administer(p):
                out.append(p)
        return out

    def version_label(self) -> str:
        return f"config v{self.version.number}" if self.version is not None else "no config"

    def explain(self, path: str) -> list[str]:
        """Sentences naming what grants the user's permissions on *path*."""
        if self.staff:
            return ["You are staff: you see and do everything."]
        lines: list[str] = []
        admin = self.admin_grant(path)
        if admin is not None:
            lines.append(
                f"You administer {path} through {admin.kind} of {admin.queue}, "
                f"{self.version_label()}."
            )
        view = self.view_grant(path)
        if view is not None and admin is None:
            lines.append(
                f"You view {path} through {view.kind} of {view.queue}, {self.version_label()}."
            )
        if not lines and self.reads_everything:
            lines.append("You read every queue (permission to view every queue).")
        return lines


def access_for(user: Any, partition: models.Partition | None) -> Access:
    """*user*'s permissions on *partition* as its config in force grants them."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Access(partition, Identity("", ()))
    identity = identity_of(user)
    staff = bool(getattr(user, "is_staff", False))
    reads = staff or bool(user.has_perm(VIEW_EVERY_QUEUE))
    from dashboard.services.scope.latest import latest_config

    version = latest_config(partition) if partition is not None else None
    tree = _tree_of_version(version.pk, version.checksum) if version is not None else AclTree({})
    return Access(partition, identity, staff, reads, version, tree)


@dataclass(frozen=True, slots=True)
class QueueGrant:
    """A queue the user administers or views, and what grants it."""

    queue: str
    grant: Grant
    administers: bool


def granted_queues(access: Access, paths: Iterable[str]) -> list[QueueGrant]:
    """Of *paths* (a partition's queues), the topmost ones the user administers or
    views (their children inherit), each with the grant."""
    out: list[QueueGrant] = []
    for path in sorted(set(paths)):
        admin = access.admin_grant(path)
        grant = admin or access.view_grant(path)
        if grant is None:
            continue
        # a child whose parent is listed with at least as much is not listed again
        if any(path.startswith(g.queue + ".") and (g.administers or admin is None) for g in out):
            continue
        out.append(QueueGrant(path, grant, admin is not None))
    return out
