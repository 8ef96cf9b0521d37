"""Every limit the scheduler applies to a pending ask on its queue's path, in its order.

yunikorn-core places an application's ask only when, in this order
(``Queue.TryAllocate`` and ``Application.tryAllocate``, pkg/scheduler/objects):

1. an application still **Accepted** may start: every queue on its path has room in
   its ``maxapplications`` (``Queue.canRunApp``: running applications + this one <=
   the limit) and its user's and groups' ``maxapplications`` limits have room
   (``ugm.CanRunApp``); an application that may not start keeps all its asks
   waiting, whatever they ask;
2. the ask is not a real pod of a gang whose placeholder of its task group holds
   room already (``Application.canReplace``: it waits to swap with it);
3. the ask fits in its user's and groups' ``maxresources`` headroom on the path
   (``ugm.Headroom``: "Not enough user quota");
4. the ask fits under the max of every queue on its path (``Queue.getHeadRoom``:
   "Not enough queue quota");
5. then a node.

:func:`path_limits` reads each of them from the snapshot (the queues' maximum and
running applications as the scheduler reported them, the applications' users,
groups, states and usage) and the config in force (the ``limits`` of each queue of
the path), and names the first one that holds the ask. User and group usage is the
sum of the applications of that user (of a user in that group) below the queue, as
the snapshot holds them; the scheduler's own tracking can differ in time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dashboard import display, models
from dashboard.importers.quantities import parse_quantity
from dashboard.services.scope.latest import latest_config
from dashboard.services.snapshots.spans import snapshot_allocations, snapshot_applications

Resource = Mapping[str, int]

#: Application states the scheduler counts as running (``runningApps``).
RUNNING_STATES = frozenset({"Starting", "Running", "Completing"})
#: States in which an application waits to start (``maxapplications`` applies).
WAITING_STATES = frozenset({"New", "Accepted"})


@dataclass(frozen=True, slots=True)
class LimitCheck:
    """One limit on the ask's path: what it is, whether it holds the ask, in words."""

    kind: str  # max_applications, user_applications, placeholder, user_quota, queue_max
    holds: bool
    text: str


@dataclass(frozen=True, slots=True)
class PathLimits:
    """The limits read for one ask, in the scheduler's order; ``held_by`` the first
    that holds it (None when none does)."""

    checks: tuple[LimitCheck, ...] = field(default_factory=tuple)

    @property
    def held_by(self) -> LimitCheck | None:
        return next((c for c in self.checks if c.holds), None)


def _path(queue: str) -> list[str]:
    parts = queue.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def _under(path: str, queue: str) -> bool:
    return queue == path or queue.startswith(path + ".")


def _config_limits(partition: models.Partition) -> dict[str, list[Mapping[str, Any]]]:
    """The ``limits`` of every queue of the config in force, by path."""
    version = latest_config(partition)
    root = version.parsed.get("root") if version is not None else None
    out: dict[str, list[Mapping[str, Any]]] = {}
    stack = [root] if isinstance(root, Mapping) else []
    while stack:
        q = stack.pop()
        raw = q.get("raw")
        limits = raw.get("limits") if isinstance(raw, Mapping) else None
        if isinstance(limits, list) and isinstance(q.get("path"), str):
            out[q["path"]] = [lim for lim in limits if isinstance(lim, Mapping)]
        stack.extend(c for c in q.get("children") or [] if isinstance(c, Mapping))
    return out


def _limit_resource(value: object) -> dict[str, int]:
    """A limit's ``maxresources`` in the scheduler's units (as the config importer reads
    quantities: vcore in millicores, memory in bytes)."""
    if not isinstance(value, Mapping):
        return {}
    out = {}
    for t, text in value.items():
        try:
            q = parse_quantity(str(text), str(t))
        except (ValueError, TypeError):
            continue  # the config importer refused such a value already
        if q:
            out[str(t)] = q
    return out


def _applies(limit: Mapping[str, Any], user: str, groups: Sequence[str]) -> str | None:
    """Whom *limit* limits for an application of *user* in *groups* (None: not them)."""
    users = [str(u) for u in limit.get("users") or []]
    if user and (user in users or "*" in users):
        return f"user {user}"
    named = [str(g) for g in limit.get("groups") or []]
    for g in groups:
        if g in named:
            return f"group {g}"
    if groups and "*" in named:
        return f"group {groups[0]}"
    return None


def _apps_of(apps: Iterable[Mapping[str, Any]], who: str) -> list[Mapping[str, Any]]:
    kind, _, name = who.partition(" ")
    if kind == "user":
        return [a for a in apps if a["user"] == name]
    return [a for a in apps if name in a["groups"]]


def path_limits(
    snapshot: models.ClusterSnapshot,
    asks: Sequence[models.PendingAsk],
    queue_over: Mapping[str, list[str]],
) -> dict[str, PathLimits]:
    """The limits on each ask's path (see the module docstring), by ask key.

    *queue_over* gives, per ask key, the sentences of the queue maxes the ask goes
    over (the dashboard's reading of the engine's snapshot); they are the fourth check.
    """
    if not asks:
        return {}
    paths = {p for a in asks for p in _path(a.queue)}
    queues = {
        q.path: q
        for q in snapshot.queues.filter(path__in=paths).only(
            "path", "max_applications", "running_apps"
        )
    }
    rows = snapshot_applications(snapshot).values_list(
        "app_id", "queue", "state", "used", "details"
    )
    apps: dict[str, dict[str, Any]] = {}
    for app_id, queue, state, app_used, details in rows:
        d = details if isinstance(details, Mapping) else {}
        task_groups = d.get("task_groups")
        apps[app_id] = {
            "queue": queue,
            "state": state,
            "used": app_used if isinstance(app_used, Mapping) else {},
            "user": str(d.get("user") or ""),
            "groups": [str(g) for g in d.get("groups") or []],
            "task_groups": task_groups if isinstance(task_groups, Mapping) else {},
        }
    limits = _config_limits(snapshot.partition)
    placeholders = {
        (app, group)
        for app, group in snapshot_allocations(snapshot)
        .filter(placeholder=True, app__in=[a.app for a in asks])
        .values_list("app", "task_group")
    }
    out: dict[str, PathLimits] = {}
    for ask in asks:
        app = apps.get(ask.app) or {
            "queue": ask.queue,
            "state": "",
            "used": {},
            "user": "",
            "groups": [],
            "task_groups": {},
        }
        resources = {str(t): int(q) for t, q in (ask.resources or {}).items()}
        checks: list[LimitCheck] = []
        waiting = app["state"] in WAITING_STATES
        # 1. maxapplications of every queue on the path (the scheduler's own counts)
        for path in _path(ask.queue):
            q = queues.get(path)
            if q is None or not q.max_applications:
                continue
            running = q.running_apps or 0
            full = running + 1 > q.max_applications
            checks.append(
                LimitCheck(
                    "max_applications",
                    waiting and full,
                    f"max applications of {path}: {running} running of {q.max_applications}"
                    + (
                        f"; application {ask.app} is {app['state']} and cannot start"
                        if waiting and full
                        else ""
                    ),
                )
            )
        # 1b. the user's and groups' maxapplications on the path
        for path in _path(ask.queue):
            for lim in limits.get(path, []):
                who = _applies(lim, app["user"], app["groups"])
                most = lim.get("maxapplications")
                if who is None or not isinstance(most, int) or most <= 0:
                    continue
                mine = [
                    a
                    for a in _apps_of(apps.values(), who)
                    if _under(path, a["queue"]) and a["state"] in RUNNING_STATES
                ]
                full = len(mine) + 1 > most
                checks.append(
                    LimitCheck(
                        "user_applications",
                        waiting and full,
                        f"max applications of {who} in {path}: {len(mine)} running of {most}"
                        + (f"; application {ask.app} cannot start" if waiting and full else ""),
                    )
                )
        # 2. a gang placeholder of the ask's task group holds room for it
        group = app["task_groups"].get(ask.key) if app["task_groups"] else None
        if group and (ask.app, group) in placeholders:
            checks.append(
                LimitCheck(
                    "placeholder",
                    True,
                    f"gang: a placeholder of task group {group} holds room for this pod; it "
                    "waits to replace it, not for room of its own",
                )
            )
        # 3. the user's and groups' maxresources on the path
        for path in _path(ask.queue):
            for lim in limits.get(path, []):
                who = _applies(lim, app["user"], app["groups"])
                most_res = _limit_resource(lim.get("maxresources"))
                if who is None or not most_res:
                    continue
                used: dict[str, int] = {}
                for a in _apps_of(apps.values(), who):
                    if _under(path, a["queue"]):
                        for t, q in a["used"].items():
                            used[t] = used.get(t, 0) + int(q)
                over = [
                    f"{t} {display.format_quantity(t, used.get(t, 0))} used + "
                    f"{display.format_quantity(t, q)} asked > "
                    f"{display.format_quantity(t, most_res[t])}"
                    for t, q in sorted(resources.items())
                    if t in most_res and used.get(t, 0) + q > most_res[t]
                ]
                checks.append(
                    LimitCheck(
                        "user_quota",
                        bool(over),
                        f"max resources of {who} in {path}: "
                        + ("; ".join(over) if over else "the ask fits"),
                    )
                )
        # 4. the max of every queue on the path
        over_max = list(queue_over.get(ask.key, []))
        checks.append(
            LimitCheck(
                "queue_max",
                bool(over_max),
                "; ".join(over_max)
                if over_max
                else "the ask fits under the max of every queue on its path",
            )
        )
        out[ask.key] = PathLimits(tuple(checks))
    return out
