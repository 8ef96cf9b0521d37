"""configvalidator.go's limit checks: max resources and applications per user and group."""

from __future__ import annotations

from typing import Any

from dashboard.importers.config.decoding import _fail
from dashboard.importers.config.specs import ROOT
from dashboard.importers.config.validation import (
    _GROUP,
    _Q,
    _USER,
    _cw_min_permissive,
    _fit_max_undef,
    _is_zero,
    _parse_resource,
)
from dashboard.importers.quantities import (
    format_resource,
)


def _check_limits(
    limits: list[Any] | None, where: str, queue: _Q | None, warnings: list[str]
) -> None:
    """checkLimits/checkLimit: names, wildcards, duplicates, resources within the queue's."""
    if not limits:
        return
    users: dict[str, bool] = {}
    groups: dict[str, bool] = {}
    for i, limit in enumerate(limits):
        if limit is None:
            raise _fail(f"{where}: limit #{i} is empty", None)
        line = limit.line
        desc = limit.get("limit") or f"#{i}"
        lusers = limit.get("users") or []
        lgroups = limit.get("groups") or []
        if not lusers and not lgroups:
            raise _fail(f"{where}: limit '{desc}' has empty user and group lists", line)
        for name in lusers:
            if name != "*" and _USER.fullmatch(name) is None:
                raise _fail(f"{where}: invalid limit user name '{name}'", line)
            if users.get(name):
                raise _fail(f"{where}: duplicated user name {name} in limits", line)
            users[name] = True
            if users.get("*") and name != "*":
                raise _fail(f"{where}: user {name} is listed after the wildcard user limit", line)
        for name in lgroups:
            if name != "*" and _GROUP.fullmatch(name) is None:
                raise _fail(f"{where}: invalid limit group name '{name}'", line)
            if groups.get(name):
                raise _fail(f"{where}: duplicated group name {name} in limits", line)
            groups[name] = True
            if groups.get("*") and name != "*":
                raise _fail(f"{where}: group {name} is listed after the wildcard group limit", line)
        if groups.get("*") and len(groups) == 1:
            raise _fail(
                f"{where}: a wildcard group limit needs at least one limit with a named group",
                line,
            )
        smap = limit.get("maxresources")
        limit_res = _parse_resource(smap, f"{where}: limit '{desc}' maxresources", warnings)
        if smap is not None and smap.items and _is_zero(limit_res):
            raise _fail(f"{where}: limit '{desc}' maxresources are all zero", line)
        max_apps = limit.get("maxapplications") or 0
        if max_apps == 0 and not (smap is not None and smap.items):
            raise _fail(
                f"{where}: limit '{desc}' sets neither maxresources nor maxapplications", line
            )
        if queue is not None:
            q_apps = queue.obj.get("maxapplications") or 0
            if q_apps and q_apps < max_apps:
                raise _fail(
                    f"{where}: limit '{desc}' maxapplications {max_apps} exceeds the queue's "
                    f"maxapplications {q_apps}",
                    line,
                )
            if queue.path != ROOT and not _fit_max_undef(queue.max, limit_res):
                raise _fail(
                    f"{where}: limit '{desc}' maxresources {format_resource(limit_res)} exceed "
                    f"the queue's max {format_resource(queue.max)}",
                    line,
                )


def _check_limit_resources(
    q: _Q,
    users: dict[str, dict[str, dict[str, int]]],
    groups: dict[str, dict[str, dict[str, int]]],
    parent_path: str,
) -> None:
    """checkLimitResource: a user/group limit never exceeds the same limit higher up."""
    users[q.path] = {u: dict(v) for u, v in users.get(parent_path, {}).items()}
    groups[q.path] = {g: dict(v) for g, v in groups.get(parent_path, {}).items()}
    for limit in q.obj.get("limits") or []:
        res = _parse_resource(limit.get("maxresources"), f"queue {q.path} limit", [])
        for kind, names, table in (
            ("user", limit.get("users") or [], users),
            ("group", limit.get("groups") or [], groups),
        ):
            for name in names:
                above = table.get(parent_path, {}).get(name)
                if above is not None:
                    if not _fit_max_undef(above, res):
                        raise _fail(
                            f"queue {q.path}: {kind} {name} max resources {format_resource(res)} "
                            f"exceed the limit {format_resource(above)} set higher up",
                            limit.line,
                        )
                    table[q.path][name] = _cw_min_permissive(res, above)
                else:
                    table[q.path][name] = res
    for child in q.children:
        _check_limit_resources(child, users, groups, q.path)


def _check_limit_apps(
    q: _Q, users: dict[str, dict[str, int]], groups: dict[str, dict[str, int]], parent_path: str
) -> None:
    """checkLimitMaxApplications: the same for maxapplications."""
    limits = q.obj.get("limits") or []
    if not limits:
        if parent_path in users:
            users[q.path] = users[parent_path]
        if parent_path in groups:
            groups[q.path] = groups[parent_path]
    for limit in limits:
        apps = limit.get("maxapplications") or 0
        for kind, names, table in (
            ("user", limit.get("users") or [], users),
            ("group", limit.get("groups") or [], groups),
        ):
            for name in names:
                above = table.get(parent_path, {}).get(name)
                mine = table.setdefault(q.path, {})
                if above is not None:
                    if above and (above < apps or apps == 0):
                        raise _fail(
                            f"queue {q.path}: {kind} {name} maxapplications {apps} exceeds "
                            f"{above} set higher up",
                            limit.line,
                        )
                    mine[name] = min(apps, above)
                else:
                    mine[name] = apps
    for child in q.children:
        _check_limit_apps(child, users, groups, q.path)


def _check_queue_limits(q: _Q, warnings: list[str]) -> None:
    _check_limits(q.obj.get("limits"), f"queue {q.path}", q, warnings)
    for child in q.children:
        _check_queue_limits(child, warnings)
