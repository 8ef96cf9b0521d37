"""YuniKorn's queue ACLs, as yunikorn-core parses and checks them (pure Python).

The rules follow ``pkg/common/security/acl.go`` (``NewACL``, ``setAllAllowed``,
``setUsers``, ``setGroups``, ``CheckAccess``) and the queue's access checks in
``pkg/scheduler/objects/queue.go`` (``CheckSubmitAccess``, ``CheckAdminAccess``):

- An ACL is ``"users groups"``: at most one space (``strings.Split(acl, " ")`` giving
  more than two fields is an error, *before* any trimming); each part is a
  comma-separated list.  Names are not trimmed: a name that does not match the
  user (or group) pattern is ignored, an empty name skipped.
- The empty ACL denies everybody.  ``"*"`` (after trimming white space around the
  whole text), a users part that is just ``*``, or a groups part that is just ``*``
  allows everybody.
- A queue may be administered by whoever its ``adminacl`` (or an ancestor's) allows;
  applications may be submitted (here: the queue may be viewed) by whoever its
  ``submitacl`` or ``adminacl`` (or an ancestor's) allows.  The recovery queue
  (``root.@recovery@``) never passes the submit check.
- ACLs not set are empty: a root without ACLs denies everybody, so nothing is granted
  unless a queue grants it.  (yunikorn-core's built-in default config, used when no
  config is given at all, sets ``submitacl: '*'`` on the root: see
  :data:`DEFAULT_ROOT_SUBMIT_ACL`.)

This module imports nothing of Django: the dashboard's permissions
(:mod:`dashboard.access.grants`) feed it the config in force.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

#: pkg/common/constants.go
WILDCARD = "*"
SEPARATOR = ","
SPACE = " "
ROOT = "root"
#: pkg/common/constants.go: RecoveryQueueFull
RECOVERY_QUEUE = "root.@recovery@"
#: pkg/common/configs/config.go: DefaultSchedulerConfig's root queue
DEFAULT_ROOT_SUBMIT_ACL = "*"

# acl.go: userNameRegExp and groupRegExp. Go's ``$`` (no multi-line flag) matches only at
# the very end, so the Python patterns are matched with fullmatch, never with ``$``.
_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?")
_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")

# Go's strings.TrimSpace trims what unicode.IsSpace calls space (Python's str.strip()
# also trims the separators U+001C..U+001F, which Go keeps).
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def go_trim_space(text: str) -> str:
    """``strings.TrimSpace``."""
    return text.strip(_GO_SPACE)


class AclError(ValueError):
    """An ACL yunikorn-core refuses (``NewACL`` returns an error: the queue is not built)."""


@dataclass(frozen=True, slots=True)
class Acl:
    """One parsed ACL: the users and groups it names, or everybody."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    all_allowed: bool = False
    #: the ACL's text as configured
    text: str = ""

    def allows(self, user: str, groups: Iterable[str]) -> bool:
        """``ACL.CheckAccess``: everybody, the user by name, or one of its groups."""
        if self.all_allowed:
            return True
        if user in self.users:
            return True
        return any(g in self.groups for g in groups)


def parse_acl(text: str) -> Acl:
    """``security.NewACL``: the ACL of *text*; :class:`AclError` for more than one space."""
    if text == "":
        return Acl()
    fields = text.split(SPACE)
    if len(fields) > 2:
        raise AclError(f"multiple spaces found in ACL: '{text}'")
    all_allowed = go_trim_space(text) == WILDCARD  # setAllAllowed
    users: set[str] = set()
    user_list = fields[0].split(SEPARATOR)
    if len(user_list) == 1 and user_list[0] == WILDCARD:  # setUsers: wildcard list
        all_allowed = True
    else:
        users = {u for u in user_list if u != "" and _USER.fullmatch(u)}
    groups: set[str] = set()
    if len(fields) == 2 and not all_allowed:  # setGroups ignores groups once all allowed
        group_list = fields[1].split(SEPARATOR)
        if len(group_list) == 1 and group_list[0] == WILDCARD:
            users = set()  # setGroups: "a.users = make(map[string]bool)"
            all_allowed = True
        else:
            groups = {g for g in group_list if g != "" and _GROUP.fullmatch(g)}
    if all_allowed:
        users, groups = set(), set()
    return Acl(frozenset(users), frozenset(groups), all_allowed, text)


Kind = Literal["adminacl", "submitacl"]


@dataclass(frozen=True, slots=True)
class Grant:
    """Why a permission holds: the queue whose ACL (of *kind*) allows the user."""

    queue: str
    kind: Kind
    acl: str


@dataclass(frozen=True, slots=True)
class QueueAcls:
    """A configured queue's two ACLs (``None``: not set, i.e. empty) and any parse error."""

    admin: Acl
    submit: Acl
    #: the text of an ACL core refuses (the queue's config cannot be applied), else ""
    problem: str = ""


def queue_acls(adminacl: str | None, submitacl: str | None) -> QueueAcls:
    """The ACLs of one queue; an ACL core refuses grants nothing and is named in *problem*."""
    problems: list[str] = []
    parsed: list[Acl] = []
    for kind, text in (("adminacl", adminacl or ""), ("submitacl", submitacl or "")):
        try:
            parsed.append(parse_acl(text))
        except AclError as exc:
            problems.append(f"{kind}: {exc}")
            parsed.append(Acl(text=text))
    return QueueAcls(parsed[0], parsed[1], "; ".join(problems))


def parent_path(path: str) -> str | None:
    """``root.a.b`` -> ``root.a``; the root has none."""
    head, dot, _ = path.rpartition(".")
    return head if dot else None


class AclTree:
    """The ACLs of a partition's configured queues, with core's inheritance.

    A queue not in the config (a dynamic queue) has no ACLs of its own: its
    configured ancestors decide, as its parent's ``CheckAdminAccess`` does.
    """

    def __init__(self, queues: Mapping[str, QueueAcls]) -> None:
        self._queues = {path.lower(): acls for path, acls in queues.items()}

    def paths(self) -> list[str]:
        """The configured queues, sorted."""
        return sorted(self._queues)

    def problems(self) -> dict[str, str]:
        """Queues with an ACL core refuses, and why."""
        return {p: q.problem for p, q in sorted(self._queues.items()) if q.problem}

    def _chain(self, path: str) -> Iterable[tuple[str, QueueAcls]]:
        current: str | None = path.lower()
        while current is not None:
            acls = self._queues.get(current)
            if acls is not None:
                yield current, acls
            current = parent_path(current)

    def admin_grant(self, path: str, user: str, groups: Iterable[str]) -> Grant | None:
        """``Queue.CheckAdminAccess``: the nearest queue (itself, then up) whose
        ``adminacl`` allows the user, or None."""
        groups = tuple(groups)
        for queue, acls in self._chain(path):
            if acls.admin.allows(user, groups):
                return Grant(queue, "adminacl", acls.admin.text)
        return None

    def view_grant(self, path: str, user: str, groups: Iterable[str]) -> Grant | None:
        """``Queue.CheckSubmitAccess``: the nearest queue whose ``submitacl`` or
        ``adminacl`` allows the user (the submit ACL named first), or None; never for
        the recovery queue."""
        if path.lower() == RECOVERY_QUEUE:
            return None
        groups = tuple(groups)
        for queue, acls in self._chain(path):
            if acls.submit.allows(user, groups):
                return Grant(queue, "submitacl", acls.submit.text)
            if acls.admin.allows(user, groups):
                return Grant(queue, "adminacl", acls.admin.text)
        return None

    def may_administer(self, path: str, user: str, groups: Iterable[str]) -> bool:
        return self.admin_grant(path, user, groups) is not None

    def may_view(self, path: str, user: str, groups: Iterable[str]) -> bool:
        return self.view_grant(path, user, groups) is not None
