"""configvalidator.go's queue checks: names, ACLs, resources, max apps."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from dashboard.importers.config.decoding import _fail, _Obj, _SMap
from dashboard.importers.quantities import (
    QuantityError,
    check_resource_type,
    format_resource,
    parse_quantity,
)

_QUEUE_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.@-]*[$]?")


_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")


def _fit_max_undef(big: Mapping[str, int], small: Mapping[str, int]) -> bool:
    # Resource.FitInMaxUndef: types missing in big are unlimited; negatives count as 0
    return all(t not in big or v <= max(big[t], 0) for t, v in small.items())


def _cw_min_permissive(a: Mapping[str, int], b: Mapping[str, int] | None) -> dict[str, int]:
    # ComponentWiseMinPermissive: a type missing on one side takes the other's value
    out = dict(a)
    if b:
        for t, q in b.items():
            out[t] = min(out[t], q) if t in out else q
    return out


def _is_zero(r: Mapping[str, int] | None) -> bool:
    return not r or all(q == 0 for q in r.values())


def _parse_resource(smap: _SMap | None, where: str, warnings: list[str]) -> dict[str, int]:
    """A config resource map -> quantities; errors name the line of the bad entry.

    yunikorn-core accepts any type name (``NewResourceFromConf``); one that is not
    a Kubernetes resource name is kept and warned about.
    """
    if smap is None:
        return {}
    out: dict[str, int] = {}
    for t, text in smap.items.items():
        line = smap.key_lines.get(t, smap.line)
        try:
            check_resource_type(t)
        except QuantityError as exc:
            warning = (
                f"line {line}: {where}: {exc}; the scheduler accepts it, but no node offers "
                "such a type, so this value never limits anything"
            )
            if warning not in warnings:
                warnings.append(warning)
        try:
            out[t] = parse_quantity(text, t)
        except QuantityError as exc:
            raise _fail(f"{where}: {exc}", line) from None
    return out


@dataclass(slots=True)
class _Q:
    """A queue during validation: the decoded struct plus derived values."""

    obj: _Obj
    name: str
    path: str
    parent_flag: bool
    children: list[_Q]
    guaranteed: dict[str, int] = field(default_factory=dict)
    max: dict[str, int] = field(default_factory=dict)
    inserted: bool = False

    @property
    def line(self) -> int:
        return self.obj.line

    def resources_line(self, key: str) -> int:
        res = self.obj.get("resources")
        if isinstance(res, _Obj):
            return res.line_of(key)
        return self.obj.line_of("resources")


def _build_q(obj: _Obj, parent_path: str) -> _Q:
    raw_name = obj.get("name") or ""
    lname = raw_name.lower()
    path = lname if not parent_path else f"{parent_path}.{lname}"
    children = [_build_q(c, path) for c in (obj.get("queues") or []) if c is not None]
    return _Q(obj, raw_name, path, bool(obj.get("parent")), children)


def _check_acl(acl: str, where: str, line: int) -> None:
    acl = acl.strip()
    if acl in ("", "*"):
        return
    if len(acl.split()) > 2:
        raise _fail(f"{where}: multiple spaces found in ACL '{acl}' (use 'users groups')", line)


def _check_names(q: _Q) -> None:
    """checkQueues: ACLs, limits, child names and their uniqueness (ignoring case)."""
    where = f"queue {q.path}"
    _check_acl(q.obj.get("adminacl") or "", where, q.obj.line_of("adminacl"))
    _check_acl(q.obj.get("submitacl") or "", where, q.obj.line_of("submitacl"))
    seen: dict[str, int] = {}
    for child in q.children:
        if _QUEUE_NAME.fullmatch(child.name) is None:
            shown = child.name if child.name else "(empty)"
            raise _fail(
                f"invalid queue name {shown!r} under {q.path}: a name must only have "
                "alphanumeric characters, - or _, and be no longer than 64 characters "
                "(no dots: a dot separates the levels of a queue path)",
                child.obj.line_of("name"),
            )
        lower = child.name.lower()
        if lower in seen:
            raise _fail(
                f"duplicate queue name {child.name!r} under {q.path} (names ignore case; "
                f"first at line {seen[lower]})",
                child.obj.line_of("name"),
            )
        seen[lower] = child.obj.line_of("name")
    for child in q.children:
        _check_names(child)


def _parse_queue_resources(q: _Q, warnings: list[str]) -> None:
    res = q.obj.get("resources")
    guaranteed = res.get("guaranteed") if isinstance(res, _Obj) else None
    maximum = res.get("max") if isinstance(res, _Obj) else None
    q.guaranteed = _parse_resource(guaranteed, f"queue {q.path} guaranteed", warnings)
    q.max = _parse_resource(maximum, f"queue {q.path} max", warnings)
    for child in q.children:
        _parse_queue_resources(child, warnings)


def _check_queue_resource(
    q: _Q, parent_max: dict[str, int] | None, parent: _Q | None
) -> dict[str, int]:
    """checkQueueResource: returns the guaranteed the parent must cover."""
    if not _fit_max_undef(q.max, q.guaranteed):
        raise _fail(
            f"queue {q.path}: guaranteed {format_resource(q.guaranteed)} is larger than its "
            f"max {format_resource(q.max)} (guaranteed must fit in max for every type max sets)",
            q.resources_line("max"),
        )
    if parent_max is not None and not _fit_max_undef(parent_max, q.max):
        owner = parent.path if parent is not None else "its parent"
        raise _fail(
            f"queue {q.path}: max {format_resource(q.max)} does not fit in the max "
            f"{format_resource(parent_max)} that {owner} allows (a child's max must fit inside "
            f"its parent's max)",
            q.resources_line("max"),
        )
    eff_max = _cw_min_permissive(q.max, parent_max)
    sum_g: dict[str, int] = {}
    for child in q.children:
        child_g = _check_queue_resource(child, eff_max, q)
        for t, v in child_g.items():
            sum_g[t] = sum_g.get(t, 0) + v
    if not _fit_max_undef(q.guaranteed, sum_g):
        raise _fail(
            f"queue {q.path}: guaranteed {format_resource(q.guaranteed)} is smaller than the sum "
            f"of its children's guaranteed {format_resource(sum_g)}",
            q.resources_line("guaranteed"),
        )
    if not _fit_max_undef(eff_max, sum_g):
        raise _fail(
            f"queue {q.path}: max {format_resource(eff_max)} is smaller than the sum of its "
            f"children's guaranteed {format_resource(sum_g)}",
            q.resources_line("max"),
        )
    return sum_g if _is_zero(q.guaranteed) else q.guaranteed


def _check_max_applications(q: _Q) -> None:
    mine = q.obj.get("maxapplications") or 0
    for child in q.children:
        theirs = child.obj.get("maxapplications") or 0
        if mine and (mine < theirs or theirs == 0):
            raise _fail(
                f"queue {child.path}: maxapplications {theirs or 'unset'} must be set and not "
                f"above its parent's {mine} (parent maxApplications must be larger than child "
                "maxApplications)",
                child.obj.line_of("maxapplications"),
            )
        _check_max_applications(child)


def _iter_q(q: _Q) -> Iterator[_Q]:
    yield q
    for c in q.children:
        yield from _iter_q(c)
