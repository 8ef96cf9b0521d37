"""The queue ACL rules, case by case from yunikorn-core's Go code.

Each test's docstring quotes the lines of ``pkg/common/security/acl.go`` or
``pkg/scheduler/objects/queue.go`` (apache/yunikorn-core) its table derives from.
"""

from __future__ import annotations

import pytest

from dashboard.access.acl import (
    DEFAULT_ROOT_SUBMIT_ACL,
    Acl,
    AclError,
    AclTree,
    Grant,
    parse_acl,
    queue_acls,
)

ALICE = ("alice", ("risk",))
BOB = ("bob", ("trading",))
NOBODY = ("nobody", ())


def allows(acl: str, who: tuple[str, tuple[str, ...]]) -> bool:
    return parse_acl(acl).allows(*who)


def test_empty_acl_denies_everybody() -> None:
    """acl.go NewACL::

        acl := ACL{}
        if aclStr == "" {
            return acl, nil
        }

    and CheckAccess on the zero ACL: no allAllowed, nil maps, so false.
    """
    assert parse_acl("") == Acl()
    for who in (ALICE, BOB, NOBODY):
        assert not allows("", who)


@pytest.mark.parametrize("text", ["*", " *", "* ", "*\t", "\t*", "*\n"])
def test_wildcard_after_trimming_allows_everybody(text: str) -> None:
    """acl.go setAllAllowed, called with the whole ACL text before it is split::

    part = strings.TrimSpace(part)
    a.allAllowed = part == common.Wildcard
    """
    acl = parse_acl(text)
    assert acl.all_allowed
    for who in (ALICE, BOB, NOBODY):
        assert acl.allows(*who)


@pytest.mark.parametrize(
    ("text", "everybody"),
    [
        ("alice *", True),  # the groups part is the wildcard
        ("* risk", True),  # the users part is the wildcard: groups ignored
        ("*,bob", False),  # a list holding '*' is no wildcard ('*' is no valid name)
        ("alice *,risk", False),  # likewise for groups
    ],
)
def test_wildcard_list_in_users_or_groups_part(text: str, everybody: bool) -> None:
    """acl.go setUsers::

        if len(userList) == 1 && userList[0] == common.Wildcard {
            a.allAllowed = true

    setGroups::

        if a.allAllowed { ... return }
        if len(groupList) == 1 && groupList[0] == common.Wildcard {
            a.users = make(map[string]bool)
            a.allAllowed = true
    """
    assert parse_acl(text).all_allowed is everybody
    assert allows(text, NOBODY) is everybody


def test_single_space_denies_everybody() -> None:
    """acl.go NewACL: ``strings.Split(" ", " ")`` is ``["", ""]`` (two fields, no error);
    setUsers and setGroups skip them::

        // skip an empty user (happens if ACL is just groups)
        if user == "" { continue }
        // skip an empty group (happens if ACL is just users and ends in space)
        if group == "" { continue }
    """
    acl = parse_acl(" ")
    assert acl == Acl(text=" ")
    for who in (ALICE, BOB, NOBODY):
        assert not acl.allows(*who)


@pytest.mark.parametrize(
    ("text", "users", "groups"),
    [
        ("alice", {"alice"}, set()),
        ("alice,bob", {"alice", "bob"}, set()),
        ("alice ", {"alice"}, set()),  # users only, ends in a space
        (" risk", set(), {"risk"}),  # groups only, starts with a space
        ("alice risk,trading", {"alice"}, {"risk", "trading"}),
        ("alice,alice risk,risk", {"alice"}, {"risk"}),  # duplicates: one map entry
        ("alice,,bob ,risk,", {"alice", "bob"}, {"risk"}),  # empty names skipped
    ],
)
def test_users_part_then_groups_part(text: str, users: set[str], groups: set[str]) -> None:
    """acl.go NewACL::

        fields := strings.Split(aclStr, common.Space)
        acl.setUsers(strings.Split(fields[0], common.Separator), silence)
        if len(fields) == 2 {
            acl.setGroups(strings.Split(fields[1], common.Separator), silence)
        }

    The users and groups are map keys (``a.users[user] = true``): a name given twice
    is one entry.
    """
    acl = parse_acl(text)
    assert acl.users == users
    assert acl.groups == groups
    assert not acl.all_allowed


@pytest.mark.parametrize("text", ["a b c", "alice  risk", " * ", "alice risk ", "  "], ids=repr)
def test_more_than_one_space_is_refused(text: str) -> None:
    """acl.go NewACL, before any trimming::

        // should have no more than two groups defined
        fields := strings.Split(aclStr, common.Space)
        if len(fields) > 2 {
            return acl, fmt.Errorf("multiple spaces found in ACL: '%s'", aclStr)
        }

    (queue.go applyConf then fails the queue: "parsing admin ACL failed".)  A queue
    whose ACL core refuses grants nothing here, and the problem is named.
    """
    with pytest.raises(AclError, match="multiple spaces found in ACL"):
        parse_acl(text)
    acls = queue_acls(text, None)
    assert "adminacl: multiple spaces" in acls.problem
    assert not acls.admin.allows(*NOBODY)


@pytest.mark.parametrize(
    ("text", "users", "groups"),
    [
        ("alice,1bob,-x,b@c.d,e$,f$g", {"alice", "b@c.d", "e$"}, set()),
        ("_svc,a.b, risk-1,r.isk,@g,1g", {"_svc", "a.b"}, {"risk-1"}),
        ("alice\n", set(), set()),  # Go's $ is the end of text: no trailing newline
        ("alice, bob", {"alice"}, {"bob"}),  # names are not trimmed: ' ' splits
        ("Alice ", {"Alice"}, set()),  # case kept: 'alice' is another user
    ],
)
def test_invalid_names_are_ignored(text: str, users: set[str], groups: set[str]) -> None:
    """acl.go::

        var userNameRegExp = regexp.MustCompile("^[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?$")
        var groupRegExp = regexp.MustCompile("^[_a-zA-Z][a-zA-Z0-9_-]*$")
        if userNameRegExp.MatchString(user) { a.users[user] = true } else { ...ignoring user

    and the same for groups with groupRegExp.
    """
    acl = parse_acl(text)
    assert acl.users == users
    assert acl.groups == groups


@pytest.mark.parametrize(
    ("text", "who", "allowed"),
    [
        ("alice", ALICE, True),
        ("alice", BOB, False),
        (" risk", ALICE, True),
        (" risk", BOB, False),
        ("bob risk", ALICE, True),
        ("bob risk", BOB, True),
        ("bob risk", NOBODY, False),
        ("alice", ("Alice", ()), False),  # map lookup: case-sensitive
        ("risk", ("bob", ("risk",)), False),  # a users part does not name groups
    ],
)
def test_check_access(text: str, who: tuple[str, tuple[str, ...]], allowed: bool) -> None:
    """acl.go CheckAccess::

    if a.allAllowed { return true }
    if a.users[userObj.User] { return true }
    for _, group := range userObj.Groups {
        if a.groups[group] { return true }
    }
    return false
    """
    assert allows(text, who) is allowed


TREE = AclTree(
    {
        "root": queue_acls("ops", None),  # root: admin "ops", no submit ACL
        "root.tenants": queue_acls(" risk", None),
        "root.tenants.risk": queue_acls(None, "bob"),
        "root.tenants.trading": queue_acls(None, " trading"),
        "root.shared": queue_acls(None, "*"),
    }
)


@pytest.mark.parametrize(
    ("path", "who", "grant"),
    [
        ("root.tenants.risk", ALICE, Grant("root.tenants", "adminacl", " risk")),
        ("root.tenants.risk.batch", ALICE, Grant("root.tenants", "adminacl", " risk")),
        ("root.tenants", ALICE, Grant("root.tenants", "adminacl", " risk")),
        ("root", ALICE, None),
        ("root.tenants.risk", BOB, None),  # bob submits there, administers nothing
        ("root.shared", BOB, None),  # submitacl '*' grants no administration
        ("root.tenants.risk", ("ops", ()), Grant("root", "adminacl", "ops")),
        ("ROOT.Tenants.Risk", ALICE, Grant("root.tenants", "adminacl", " risk")),
    ],
)
def test_admin_access_is_inherited(
    path: str, who: tuple[str, tuple[str, ...]], grant: Grant | None
) -> None:
    """queue.go CheckAdminAccess::

        allow := sq.adminACL.CheckAccess(user)
        if !allow && sq.parent != nil {
            allow = sq.parent.CheckAdminAccess(user)
        }

    A queue below the configured ones (a dynamic queue) has empty ACLs, so its parents
    decide.  Queue paths are lower-cased by the config loader.
    """
    assert TREE.admin_grant(path, *who) == grant
    assert TREE.may_administer(path, *who) is (grant is not None)


@pytest.mark.parametrize(
    ("path", "who", "grant"),
    [
        ("root.tenants.risk", BOB, Grant("root.tenants.risk", "submitacl", "bob")),
        ("root.tenants.risk", ALICE, Grant("root.tenants", "adminacl", " risk")),
        ("root.tenants.trading", BOB, Grant("root.tenants.trading", "submitacl", " trading")),
        ("root.tenants.trading", ALICE, Grant("root.tenants", "adminacl", " risk")),
        ("root.tenants.risk", NOBODY, None),
        ("root.tenants", BOB, None),  # a child's submit ACL grants nothing above it
        ("root.shared.x", NOBODY, Grant("root.shared", "submitacl", "*")),
        ("root.tenants.trading", ("ops", ()), Grant("root", "adminacl", "ops")),
    ],
)
def test_submit_access_is_submit_or_admin_inherited(
    path: str, who: tuple[str, tuple[str, ...]], grant: Grant | None
) -> None:
    """queue.go CheckSubmitAccess::

    allow := sq.submitACL.CheckAccess(user) || sq.adminACL.CheckAccess(user)
    if !allow && sq.parent != nil {
        allow = sq.parent.CheckSubmitAccess(user)
    }
    """
    assert TREE.view_grant(path, *who) == grant
    assert TREE.may_view(path, *who) is (grant is not None)


def test_recovery_queue_never_passes_the_submit_check() -> None:
    """queue.go CheckSubmitAccess::

        if common.IsRecoveryQueue(sq.QueuePath) {
            // recovery queue can never pass ACL checks
            return false
        }

    (``IsRecoveryQueue`` is ``strings.EqualFold(queueName, "root.@recovery@")``.)  The
    admin check has no such case: root's admins administer it.
    """
    tree = AclTree({"root": queue_acls("*", "*")})
    assert not tree.may_view("root.@recovery@", *NOBODY)
    assert not tree.may_view("ROOT.@Recovery@", *NOBODY)
    assert tree.may_administer("root.@recovery@", *NOBODY)


def test_root_without_acls_denies_and_the_default_config_lets_all_submit() -> None:
    """An ACL not set is the empty string (config.go: ``AdminACL string
    `yaml:",omitempty"```), so a root without ACLs denies; the scheduler's own
    default config (config.go DefaultSchedulerConfig) is::

        queues:
          - name: root
            submitacl: '*'
    """
    bare = AclTree({"root": queue_acls(None, None), "root.a": queue_acls(None, None)})
    assert not bare.may_view("root.a", *ALICE)
    assert not bare.may_administer("root.a", *ALICE)
    default = AclTree({"root": queue_acls(None, DEFAULT_ROOT_SUBMIT_ACL)})
    assert default.may_view("root.a", *NOBODY)
    assert not default.may_administer("root.a", *NOBODY)


def test_problems_name_the_queue_and_the_acl() -> None:
    """configvalidator.go checkACL trims and uses ``strings.Fields`` (so it accepts
    ``"a  b"``), while NewACL splits on single spaces and refuses it: such a config
    passes validation and then fails the queue; the dashboard names it."""
    tree = AclTree({"root": queue_acls(None, None), "root.a": queue_acls("x  y", "ok")})
    assert tree.problems() == {"root.a": "adminacl: multiple spaces found in ACL: 'x  y'"}
    assert tree.may_view("root.a", "ok", ())
