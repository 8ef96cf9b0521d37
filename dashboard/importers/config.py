"""YuniKorn queue configs (queues.yaml or its ConfigMap) -> validated, typed partition specs.

Reading mirrors yunikorn-core: the strict decoder (``KnownFields(true)``:
every unknown key is an error, keys are the lower-case Go field names), the
quantity syntax of ``quantity.go``, and the checks of ``configvalidator.go``
(root inserted when missing and without resources; child names
``^[a-zA-Z0-9_-]{1,64}$`` unique among siblings ignoring case; ACLs; limits;
a child's max inside its parent's; guaranteed inside its own max; a parent's
guaranteed and max not below the sum of its children's guaranteed; placement
rules and the ``parent: true`` they require; node sorting policy; max
applications).  Queue names are lower-cased as the scheduler does at load time.

On top of the scheduler it enforces the quota-change seed's rule that a
queue's max must exceed its guaranteed when a quota preemption delay is in
force, and it warns about configs the scheduler accepts but in which quota
preemption silently never fires (bare-number delays, delays without the
partition flag, all-zero resources that the scheduler treats as not set).

YAML is read through :mod:`dashboard.importers.yamlnodes` (no aliases, no
duplicate keys, bounded depth, YAML 1.2 scalars so a queue named ``NO``
stays a name) after a size check.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dashboard.importers.errors import ImportFailure, line_location
from dashboard.importers.quantities import (
    DurationSyntaxError,
    QuantityError,
    check_resource_type,
    format_quantity,
    format_resource,
    parse_go_duration,
    parse_quantity,
    short_duration,
)
from dashboard.importers.yamlnodes import YMap, YNode, YScalar, YSeq, kind_name, load_nodes
from engine.model import QueueConfig

MAX_CONFIG_BYTES = 2 * 1024 * 1024
"""Largest queue config (or ConfigMap) accepted, checked before any parsing."""

QUOTA_DELAY = "quota.preemption.delay"
PREEMPTION_DELAY = "preemption.delay"
ROOT = "root"
DEFAULT_PARTITION = "default"
SHORT_DELAY_SECONDS = 60.0

_QUEUE_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.@-]*[$]?")
_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
_REGEX_SPECIAL = re.compile(r"[\^$*+?()\[{}|]")
_RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")
_BARE_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?")

# Node sorting policies known to the scheduler (policies.SortingPolicyFromString).
_NODE_SORT_POLICIES = ("", "fair", "binpacking")

# yaml.v3 compatibility: a YAML 1.1 boolean word is accepted when the Go field is a bool.
_BOOL_TRUE = frozenset({"true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON"})
_BOOL_FALSE = frozenset(
    {"false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"}
)
_PLAIN_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})


# ------------------------------------------------------------------ public types


@dataclass(frozen=True)
class QueueSpec:
    """One configured queue (names lower-cased as the scheduler does).

    ``guaranteed``/``max`` are in the scheduler's units (vcore millicores,
    memory bytes); ``None`` means not set, including an all-zero resource the
    scheduler ignores.  ``properties`` are the queue's own; ``quota_preemption_delay``
    is the effective delay in seconds (own value, else inherited; 0 when unset,
    unparsable or not positive).
    """

    name: str
    path: str
    parent: bool | None
    guaranteed: dict[str, int] | None
    max: dict[str, int] | None
    properties: dict[str, str]
    quota_preemption_delay: float
    max_applications: int | None
    child_template: dict[str, Any] | None
    is_leaf: bool
    children: tuple[QueueSpec, ...]
    raw: dict[str, Any]
    line: int | None = field(default=None, compare=False)

    def walk(self) -> Iterator[QueueSpec]:
        """This queue and every queue below it, parents first, in config order."""
        stack = [self]
        while stack:
            q = stack.pop()
            yield q
            stack.extend(reversed(q.children))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (children nested)."""
        return {
            "name": self.name,
            "path": self.path,
            "parent": self.parent,
            "guaranteed": self.guaranteed,
            "max": self.max,
            "properties": dict(self.properties),
            "quota_preemption_delay": self.quota_preemption_delay,
            "max_applications": self.max_applications,
            "child_template": self.child_template,
            "is_leaf": self.is_leaf,
            "children": [c.to_dict() for c in self.children],
            "raw": self.raw,
        }


@dataclass(frozen=True)
class PartitionSpec:
    """One partition: its flags, placement rules and queue tree."""

    name: str
    quota_preemption_enabled: bool
    preemption_enabled: bool
    root: QueueSpec
    placement_rules: list[dict[str, Any]]
    raw: dict[str, Any]

    def queues(self) -> Iterator[QueueSpec]:
        """Every queue of the partition, parents first."""
        return self.root.walk()

    def queue(self, path: str) -> QueueSpec | None:
        """The queue with this full path (case-insensitive), or ``None``."""
        wanted = path.lower()
        for q in self.queues():
            if q.path == wanted:
                return q
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "quota_preemption_enabled": self.quota_preemption_enabled,
            "preemption_enabled": self.preemption_enabled,
            "root": self.root.to_dict(),
            "placement_rules": self.placement_rules,
            "raw": self.raw,
        }


ChangeKind = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class ConfigChange:
    """One difference between two configs, for one queue (or a partition flag).

    ``field`` is ``queue`` (the queue itself appeared or vanished), ``max``,
    ``guaranteed``, ``property`` (``key`` names it), ``quota_preemption_delay``
    (effective seconds, so inherited changes show on every affected queue),
    ``max_applications`` or, with ``queue`` empty, ``partition`` /
    ``quota_preemption_enabled``.  ``is_decrease`` is true for a max that got
    tighter in any way (a type lowered, a type newly limited, a max newly set):
    the changes that can start a quota-preemption timer.
    """

    partition: str
    queue: str
    field: str
    kind: ChangeKind
    old: Any
    new: Any
    key: str = ""
    is_decrease: bool = False

    def describe(self) -> str:
        """One readable line, e.g. ``root.batch: max vcore 14 -> 10 (decrease)``."""
        where = f"{self.queue}" if self.queue else f"partition {self.partition}"
        if self.field == "queue":
            return f"{where}: queue {self.kind}"
        if self.field in ("max", "guaranteed"):
            return f"{where}: {self.field} {_describe_resource_change(self.old, self.new)}" + (
                " (decrease)" if self.is_decrease else ""
            )
        if self.field == "property":
            return f"{where}: property {self.key} {_arrow(self.old, self.new)}"
        if self.field == "quota_preemption_delay":
            old = None if self.old is None else short_duration(self.old)
            new = None if self.new is None else short_duration(self.new)
            return f"{where}: quota preemption delay {_arrow(old, new)}"
        return f"{where}: {self.field} {_arrow(self.old, self.new)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "queue": self.queue,
            "field": self.field,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "key": self.key,
            "is_decrease": self.is_decrease,
            "text": self.describe(),
        }


def _arrow(old: object, new: object) -> str:
    if old is None:
        return f"added: {new}"
    if new is None:
        return f"removed (was {old})"
    return f"{old} -> {new}"


def _describe_resource_change(old: dict[str, int] | None, new: dict[str, int] | None) -> str:
    if old is None:
        return f"set to {format_resource(new)}"
    if new is None:
        return f"removed (was {format_resource(old)})"
    parts = []
    for t in sorted(set(old) | set(new)):
        a, b = old.get(t), new.get(t)
        if a == b:
            continue
        fa = "unlimited" if a is None else format_quantity(a, t)
        fb = "unlimited" if b is None else format_quantity(b, t)
        parts.append(f"{t} {fa} -> {fb}")
    return ", ".join(parts)


@dataclass(frozen=True)
class ConfigImport:
    """A parsed and validated queue config.

    ``text`` is the queues.yaml text (for a ConfigMap, its ``queues.yaml``
    entry) and ``checksum`` the scheduler's upper-case SHA-256 of it; ``extra``
    holds the ConfigMap's other settings (``log.level`` ...).
    """

    partitions: tuple[PartitionSpec, ...]
    warnings: tuple[str, ...]
    text: str
    checksum: str
    extra: dict[str, str]
    source_format: Literal["queues.yaml", "configmap"] = "queues.yaml"
    filename: str = "queues.yaml"
    configmap: dict[str, Any] | None = None

    def partition(self, name: str = DEFAULT_PARTITION) -> PartitionSpec:
        """The partition called *name*; raises ``KeyError`` if there is none."""
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)

    def queue(self, path: str, partition: str = DEFAULT_PARTITION) -> QueueSpec | None:
        """A queue by full path in a partition (``None`` when absent)."""
        return self.partition(partition).queue(path)

    def diff(self, other: ConfigImport | Sequence[PartitionSpec]) -> list[ConfigChange]:
        """Changes from this config (old) to *other* (new), ordered by partition, queue, field."""
        new_parts = other.partitions if isinstance(other, ConfigImport) else tuple(other)
        return diff_partitions(self.partitions, new_parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitions": [p.to_dict() for p in self.partitions],
            "warnings": list(self.warnings),
            "checksum": self.checksum,
            "extra": dict(self.extra),
            "source_format": self.source_format,
            "filename": self.filename,
            "configmap": self.configmap,
        }


# ------------------------------------------------------------------ decoding schema


@dataclass(frozen=True)
class _Struct:
    go_name: str
    fields: dict[str, Any]


@dataclass(slots=True)
class _Obj:
    """A decoded Go struct: present fields only, with their lines."""

    line: int
    fields: dict[str, Any]
    key_lines: dict[str, int]

    def get(self, key: str) -> Any:
        return self.fields.get(key)

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


@dataclass(slots=True)
class _SMap:
    """A decoded ``map[string]string`` / ``map[string]float64`` with key lines."""

    line: int
    items: dict[str, Any]
    key_lines: dict[str, int]


_STR = "string"
_BOOL = "bool"
_UINT = "uint64"
_FLOAT = "float64"
_STRMAP = ("map", _STR)
_FLOATMAP = ("map", _FLOAT)
_STRLIST = ("list", _STR)

_RESOURCES = _Struct("configs.Resources", {"guaranteed": _STRMAP, "max": _STRMAP})
_CHILD_TEMPLATE = _Struct(
    "configs.ChildTemplate",
    {"maxapplications": _UINT, "properties": _STRMAP, "resources": _RESOURCES},
)
_LIMIT = _Struct(
    "configs.Limit",
    {
        "limit": _STR,
        "users": _STRLIST,
        "groups": _STRLIST,
        "maxresources": _STRMAP,
        "maxapplications": _UINT,
    },
)
_QUEUE = _Struct("configs.QueueConfig", {})
_QUEUE.fields.update(
    {
        "name": _STR,
        "parent": _BOOL,
        "resources": _RESOURCES,
        "maxapplications": _UINT,
        "properties": _STRMAP,
        "adminacl": _STR,
        "submitacl": _STR,
        "childtemplate": _CHILD_TEMPLATE,
        "queues": ("list", _QUEUE),
        "limits": ("list", _LIMIT),
    }
)
_FILTER = _Struct("configs.Filter", {"type": _STR, "users": _STRLIST, "groups": _STRLIST})
_RULE = _Struct("configs.PlacementRule", {})
_RULE.fields.update(
    {"name": _STR, "create": _BOOL, "filter": _FILTER, "parent": _RULE, "value": _STR}
)
_PARTITION = _Struct(
    "configs.PartitionConfig",
    {
        "name": _STR,
        "queues": ("list", _QUEUE),
        "placementrules": ("list", _RULE),
        "limits": ("list", _LIMIT),
        "preemption": _Struct(
            "configs.PartitionPreemptionConfig", {"enabled": _BOOL, "quotapreemptionenabled": _BOOL}
        ),
        "nodesortpolicy": _Struct(
            "configs.NodeSortingPolicy", {"type": _STR, "resourceweights": _FLOATMAP}
        ),
        "usergroupresolver": _Struct("configs.UserGroupResolver", {"type": _STR}),
    },
)
_SCHEDULER_CONFIG = _Struct(
    "configs.SchedulerConfig", {"partitions": ("list", _PARTITION), "checksum": _STR}
)


def _fail(message: str, line: int | None) -> ImportFailure:
    return ImportFailure(message, line_location(line))


def _decode(node: YNode, schema: Any) -> Any:
    """Decode *node* into the Go type *schema*, as yaml.v3's strict decoder would."""
    if isinstance(schema, _Struct):
        return _decode_struct(node, schema)
    if isinstance(schema, tuple):
        container, inner = schema
        if container == "list":
            return _decode_list(node, inner)
        return _decode_map(node, inner)
    return _decode_scalar(node, schema)


def _decode_struct(node: YNode, schema: _Struct) -> _Obj | None:
    if isinstance(node, YScalar) and node.is_null:
        return None
    if not isinstance(node, YMap):
        hint = ""
        if schema.go_name == "configs.NodeSortingPolicy" and isinstance(node, YScalar):
            hint = f"; write it as a mapping: nodesortpolicy: {{type: {node.text}}}"
        shown = f" `{node.text}`" if isinstance(node, YScalar) else ""
        raise _fail(
            f"cannot unmarshal {kind_name(node)}{shown} into {schema.go_name}{hint}", node.line
        )
    fields: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    for key, value in node.pairs:
        name = key.text
        sub = schema.fields.get(name)
        if sub is None:
            raise _fail(_unknown_field_message(name, value, schema), key.line)
        fields[name] = _decode(value, sub)
        key_lines[name] = key.line
    return _Obj(node.line, fields, key_lines)


def _unknown_field_message(name: str, value: YNode, schema: _Struct) -> str:
    base = f"field {name} not found in type {schema.go_name}"
    if schema is _RESOURCES and name in (QUOTA_DELAY, PREEMPTION_DELAY):
        text = value.text if isinstance(value, YScalar) else "<duration>"
        shown = text
        if _BARE_NUMBER.fullmatch(text):
            try:
                shown = short_duration(float(text))
            except ValueError:
                shown = f"{text}s"
        return (
            f"{base}: resources only takes guaranteed and max. {name} is a queue property "
            f"holding a Go duration; move it to the queue's properties, e.g. "
            f"properties: {{{name}: {shown}}}"
        )
    if "." in name and schema in (_QUEUE, _CHILD_TEMPLATE):
        return f"{base}: {name} looks like a queue property; put it under properties:"
    if name.lower() in schema.fields:
        return f"{base}: keys are lower case, write {name.lower()}"
    if schema is _QUEUE and name in ("max", "guaranteed"):
        return f"{base}: put {name} under resources:"
    if schema is _QUEUE and name == "children":
        return f"{base}: child queues go under queues:"
    known = ", ".join(schema.fields)
    return f"{base} (known fields: {known})"


def _decode_list(node: YNode, inner: Any) -> list[Any] | None:
    if isinstance(node, YScalar) and node.is_null:
        return None
    if not isinstance(node, YSeq):
        shown = f" `{node.text}`" if isinstance(node, YScalar) else ""
        raise _fail(f"cannot unmarshal {kind_name(node)}{shown} into a list", node.line)
    return [_decode(item, inner) for item in node.items]


def _decode_map(node: YNode, inner: str) -> _SMap | None:
    if isinstance(node, YScalar) and node.is_null:
        return None
    if not isinstance(node, YMap):
        shown = f" `{node.text}`" if isinstance(node, YScalar) else ""
        raise _fail(f"cannot unmarshal {kind_name(node)}{shown} into map[string]{inner}", node.line)
    items: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    for key, value in node.pairs:
        items[key.text] = _decode_scalar(value, inner)
        key_lines[key.text] = key.line
    return _SMap(node.line, items, key_lines)


def _decode_scalar(node: YNode, kind: str) -> Any:
    if not isinstance(node, YScalar):
        raise _fail(f"cannot unmarshal {kind_name(node)} into {kind}", node.line)
    text = node.text
    if kind == _STR:
        return "" if node.is_null else text
    if node.is_null:
        return None
    if kind == _BOOL:
        if node.plain and text in _PLAIN_BOOLS:
            return text.lower() == "true"
        if text in _BOOL_TRUE:
            return True
        if text in _BOOL_FALSE:
            return False
        raise _fail(f"cannot unmarshal !!str `{text}` into bool (use true or false)", node.line)
    if kind == _UINT:
        value = _plain_int(node)
        if value is None or value < 0 or value > 2**64 - 1:
            raise _fail(
                f"cannot unmarshal `{text}` into uint64 (expected a whole number >= 0)", node.line
            )
        return value
    # float64
    if node.plain:
        try:
            number = float(text.replace("_", ""))
        except ValueError:
            number = None
        if number is not None and number == number and abs(number) != float("inf"):
            return number
    raise _fail(f"cannot unmarshal `{text}` into float64", node.line)


def _plain_int(node: YScalar) -> int | None:
    if not node.plain:
        return None
    text = node.text.replace("_", "")
    try:
        return int(text, 0) if text[:2].lower() in ("0x", "0o", "0b") else int(text, 10)
    except ValueError:
        return None


# ------------------------------------------------------------------ resource helpers


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


def _parse_resource(smap: _SMap | None, where: str) -> dict[str, int]:
    """A config resource map -> quantities; errors name the line of the bad entry."""
    if smap is None:
        return {}
    out: dict[str, int] = {}
    for t, text in smap.items.items():
        line = smap.key_lines.get(t, smap.line)
        try:
            check_resource_type(t)
            out[t] = parse_quantity(text, t)
        except QuantityError as exc:
            raise _fail(f"{where}: {exc}", line) from None
    return out


# ------------------------------------------------------------------ validation


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


def _check_limits(limits: list[Any] | None, where: str, queue: _Q | None) -> None:
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
        limit_res = _parse_resource(smap, f"{where}: limit '{desc}' maxresources")
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


def _parse_queue_resources(q: _Q) -> None:
    res = q.obj.get("resources")
    guaranteed = res.get("guaranteed") if isinstance(res, _Obj) else None
    maximum = res.get("max") if isinstance(res, _Obj) else None
    q.guaranteed = _parse_resource(guaranteed, f"queue {q.path} guaranteed")
    q.max = _parse_resource(maximum, f"queue {q.path} max")
    for child in q.children:
        _parse_queue_resources(child)
    # limits need the queue max (checked after parsing, as checkLimit does)


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
        res = _parse_resource(limit.get("maxresources"), f"queue {q.path} limit")
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


def _rule_chain(rule: _Obj) -> list[_Obj]:
    chain: list[_Obj] = []
    cur: _Obj | None = rule
    while cur is not None:
        chain.append(cur)
        cur = cur.get("parent")
    chain.reverse()
    return chain


def _check_rule(rule: _Obj, where: str) -> None:
    name = rule.get("name") or ""
    if _RULE_NAME.fullmatch(name) is None:
        raise _fail(
            f"{where}: invalid rule name '{name}', a name must be a valid identifier", rule.line
        )
    parent = rule.get("parent")
    if parent is not None:
        _check_rule(parent, where)
    flt = rule.get("filter")
    if flt is None:
        return
    ftype = flt.get("type") or ""
    if ftype and ftype.lower() not in ("allow", "deny"):
        raise _fail(f"{where}: invalid filter type '{ftype}' (use allow or deny)", flt.line)
    for names, pattern, label in (
        (flt.get("users") or [], _USER, "user"),
        (flt.get("groups") or [], _GROUP, "group"),
    ):
        if len(names) == 1 and pattern.fullmatch(names[0]) is None:
            try:
                re.compile(names[0])
                ok = _REGEX_SPECIAL.search(names[0]) is not None
            except re.error:
                ok = False
            if not ok:
                raise _fail(
                    f"{where}: filter {label} list is not a proper list or regexp: {names}",
                    flt.line,
                )


def _check_placement(rules: list[Any] | None, root: _Q, part: str) -> None:
    """checkPlacementRules: syntax, and the static part of each rule's queue path."""
    if not rules:
        return
    for i, rule in enumerate(rules):
        if rule is None:
            raise _fail(f"partition {part}: placement rule #{i} is empty", None)
        _check_rule(rule, f"partition {part}: placement rule #{i}")
    for i, rule in enumerate(rules):
        static = ""
        chain_names: list[str] = []
        dynamic = False
        for r in _rule_chain(rule):
            chain_names.append(r.get("name") or "")
            if dynamic:
                continue
            if r.get("name") != "fixed":
                static = static or "<dynamic>"
                dynamic = True
                continue
            value = r.get("value") or ""
            if value.startswith(ROOT):
                if static:
                    raise _fail(
                        f"partition {part}: placement rule #{i}: illegal fully qualified 'fixed' "
                        f"rule with value {value}",
                        r.line,
                    )
                static = value
                continue
            static = f"{static or ROOT}.{value}"
        if not static.startswith(ROOT):
            continue
        chain = "->".join(reversed(chain_names))
        _check_static_path(static, bool(rule.get("create")), dynamic, root, i, chain, rule.line)


def _check_static_path(
    path: str, create: bool, dynamic: bool, root: _Q, rule_no: int, chain: str, line: int
) -> None:
    parts = path.lower().split(".")
    level: list[_Q] = [root]
    parent: _Q | None = None
    for depth, part in enumerate(parts):
        if not level:
            assert parent is not None
            if not parent.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues ({path}) "
                    f"which cannot be created because the last queue ({parent.path}) is a leaf; "
                    "set parent: true on it",
                    line,
                )
            if not create:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues "
                    f"({path}) and create is false",
                    line,
                )
            return
        found = next((q for q in level if q.name == part), None)
        if found is None:
            if not create:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues "
                    f"({path}) and create is false",
                    line,
                )
            return
        if depth == len(parts) - 1:
            if dynamic and not found.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) places below {found.path}, which needs "
                    "an explicit parent: true (the scheduler checks the flag, not the children)",
                    found.line,
                )
            if not dynamic and found.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references a queue ({found.path}) "
                    "which is not a leaf",
                    line,
                )
            return
        parent = found
        level = found.children


def _check_node_sort(part_obj: _Obj, part: str) -> None:
    policy = part_obj.get("nodesortpolicy")
    if policy is None:
        return
    ptype = policy.get("type") or ""
    if ptype.lower() not in _NODE_SORT_POLICIES:
        raise _fail(
            f"partition {part}: undefined node sorting policy '{ptype}' (fair or binpacking)",
            policy.line_of("type"),
        )
    weights = policy.get("resourceweights")
    if weights is not None:
        for t, w in weights.items.items():
            if w < 0:
                raise _fail(
                    f"partition {part}: negative resource weight for {t} is not allowed",
                    weights.key_lines.get(t, weights.line),
                )


# ------------------------------------------------------------------ specs


def _plain(value: Any) -> Any:
    """Decoded values -> plain JSON-friendly data (the canonical ``raw`` form)."""
    if isinstance(value, _Obj):
        return {k: _plain(v) for k, v in value.fields.items() if v is not None}
    if isinstance(value, _SMap):
        return dict(value.items)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _delay_of(
    props: Mapping[str, str], inherited: float, where: str, line: int, warnings: list[str]
) -> float:
    text = props.get(QUOTA_DELAY)
    if text is None:
        return inherited
    try:
        seconds = parse_go_duration(text)
    except DurationSyntaxError as exc:
        if _BARE_NUMBER.fullmatch(text):
            try:
                fix = f"{text}s or {short_duration(float(text))}"
            except ValueError:
                fix = f"{text}s"
            warnings.append(
                f"line {line}: {where}: {QUOTA_DELAY} {text!r} is a bare number; the scheduler "
                f"needs a Go duration with a unit, ignores this value (keeps 0s) and quota "
                f"preemption never fires for this queue. Write {fix}."
            )
        else:
            warnings.append(
                f"line {line}: {where}: {QUOTA_DELAY} {text!r} is not a Go duration ({exc}); "
                "the scheduler keeps 0s and quota preemption never fires for this queue"
            )
        return 0.0
    if seconds < 0:
        warnings.append(
            f"line {line}: {where}: {QUOTA_DELAY} {text!r} is negative; the scheduler treats it "
            "as 0s and quota preemption never fires for this queue"
        )
        return 0.0
    if 0 < seconds < SHORT_DELAY_SECONDS:
        warnings.append(
            f"line {line}: {where}: {QUOTA_DELAY} {text!r} is shorter than a minute; the "
            "YuniKorn guide advises against delays below 60s"
        )
    return seconds


def _zero_check(
    res: dict[str, int], kind: str, where: str, line: int, warnings: list[str]
) -> dict[str, int] | None:
    if not res:
        return None
    if _is_zero(res):
        warnings.append(
            f"line {line}: {where}: {kind} {format_resource(res)} has no positive value; the "
            f"scheduler treats it as not set at all (imported as not set)"
        )
        return None
    return dict(res)


def _template_spec(obj: _Obj | None, where: str, warnings: list[str]) -> dict[str, Any] | None:
    if obj is None or not obj.fields:
        return None
    res = obj.get("resources")
    g = _parse_resource(
        res.get("guaranteed") if isinstance(res, _Obj) else None,
        f"{where} child template guaranteed",
    )
    m = _parse_resource(
        res.get("max") if isinstance(res, _Obj) else None, f"{where} child template max"
    )
    if not _fit_max_undef(m, g):
        raise _fail(
            f"{where}: child template guaranteed {format_resource(g)} is larger than its max "
            f"{format_resource(m)}",
            obj.line,
        )
    props = dict(obj.get("properties").items) if obj.get("properties") is not None else {}
    if QUOTA_DELAY in props:
        warnings.append(
            f"line {obj.line}: {where}: the child template sets {QUOTA_DELAY}; queues created "
            "from a template are dynamic and never run quota preemption"
        )
    apps = obj.get("maxapplications") or None
    if not g and not m and not props and apps is None:
        return None
    return {
        "max_applications": apps,
        "properties": props,
        "guaranteed": g or None,
        "max": m or None,
    }


def _spec(q: _Q, inherited_delay: float, warnings: list[str]) -> QueueSpec:
    where = f"queue {q.path}"
    props_obj = q.obj.get("properties")
    props: dict[str, str] = dict(props_obj.items) if props_obj is not None else {}
    prop_lines = props_obj.key_lines if props_obj is not None else {}
    delay_line = prop_lines.get(QUOTA_DELAY, q.obj.line_of("properties"))
    delay = _delay_of(props, inherited_delay, where, delay_line, warnings)
    pdelay = props.get(PREEMPTION_DELAY)
    if pdelay is not None:
        try:
            if parse_go_duration(pdelay) <= 0:
                raise DurationSyntaxError("not positive")
        except DurationSyntaxError:
            warnings.append(
                f"line {prop_lines.get(PREEMPTION_DELAY)}: {where}: {PREEMPTION_DELAY} "
                f"{pdelay!r} is not a positive Go duration; the scheduler uses the default 30s"
            )
    guaranteed = _zero_check(
        q.guaranteed, "guaranteed", where, q.resources_line("guaranteed"), warnings
    )
    maximum = _zero_check(q.max, "max", where, q.resources_line("max"), warnings)
    children = tuple(_spec(c, delay, warnings) for c in q.children)
    raw = {k: _plain(v) for k, v in q.obj.fields.items() if k != "queues" and v is not None}
    if q.inserted:
        raw = {"name": ROOT}
    apps = q.obj.get("maxapplications") or None
    return QueueSpec(
        name=q.name.lower(),
        path=q.path,
        parent=True if q.path == ROOT else q.obj.get("parent"),
        guaranteed=guaranteed,
        max=maximum,
        properties=props,
        quota_preemption_delay=delay,
        max_applications=apps,
        child_template=_template_spec(q.obj.get("childtemplate"), where, warnings),
        is_leaf=not (q.parent_flag or q.children),
        children=children,
        raw=raw,
        line=None if q.inserted else q.line,
    )


def _check_seed_rule(
    spec: QueueSpec, lines: Mapping[str, int], warnings: list[str] | None = None
) -> None:
    """Quota-change seed: with a delay in force, max must exceed guaranteed in every shared type.

    With *warnings*, a breach is reported there (one line per queue and type) instead of
    refusing the config: the scheduler itself accepts such a config.
    """
    for q in spec.walk():
        if q.quota_preemption_delay <= 0 or not q.max or not q.guaranteed:
            continue
        for t, g in q.guaranteed.items():
            m = q.max.get(t)
            if m is not None and m <= g:
                failure = _fail(
                    f"queue {q.path}: max {t} {format_quantity(m, t)} must be greater than "
                    f"guaranteed {format_quantity(g, t)} because a quota preemption delay "
                    f"({short_duration(q.quota_preemption_delay)}) is set: a lowered quota must "
                    "stay above the guarantee (quota-change design, 'Meaningful Quota Decrease')",
                    lines.get(q.path),
                )
                if warnings is None:
                    raise failure
                warnings.append(str(failure))


def _partition(
    part_obj: _Obj, seen: dict[str, int], warnings: list[str], *, seed_rule_warns: bool = False
) -> PartitionSpec:
    name = part_obj.get("name") or ""
    if name == "" or name.lower() == DEFAULT_PARTITION:
        name = DEFAULT_PARTITION
    if name.lower() in seen:
        raise _fail(
            f"duplicate partition name {name} (first at line {seen[name.lower()]})",
            part_obj.line_of("name"),
        )
    seen[name.lower()] = part_obj.line_of("name")
    where = f"partition {name}"
    queues = part_obj.get("queues")
    if queues is None:
        raise _fail(
            f"{where}: queue config is not set (add queues: with a root queue)", part_obj.line
        )
    queues = [q for q in queues if q is not None]
    if len(queues) == 1 and (queues[0].get("name") or "").lower() == ROOT:
        root = _build_q(queues[0], "")
        root.parent_flag = True
    else:
        fake = _Obj(part_obj.line_of("queues"), {"name": ROOT, "parent": True}, {})
        root = _Q(fake, ROOT, ROOT, True, [_build_q(q, ROOT) for q in queues], inserted=True)
    res = root.obj.get("resources")
    if isinstance(res, _Obj) and (res.get("guaranteed") is not None or res.get("max") is not None):
        raise _fail(f"{where}: the root queue must not have resource limits set", res.line)

    _check_names(root)
    _parse_queue_resources(root)
    _check_queue_limits(root)
    _check_queue_resource(root, None, None)
    _check_placement(part_obj.get("placementrules"), root, name)
    _check_limits(part_obj.get("limits"), where, root)
    _check_node_sort(part_obj, name)
    _check_max_applications(root)
    _check_limit_resources(root, {}, {}, "")
    _check_limit_apps(root, {}, {}, "")

    spec_root = _spec(root, 0.0, warnings)
    lines = {q.path: q.resources_line("max") for q in _iter_q(root)}
    _check_seed_rule(spec_root, lines, warnings if seed_rule_warns else None)

    preemption = part_obj.get("preemption")
    qp_enabled = bool(preemption.get("quotapreemptionenabled")) if preemption else False
    enabled_flag = preemption.get("enabled") if preemption else None
    if not qp_enabled:
        delayed = [
            q
            for q in spec_root.walk()
            if QUOTA_DELAY in q.properties and q.quota_preemption_delay > 0
        ]
        if delayed:
            state = (
                "false"
                if preemption is not None and preemption.get("quotapreemptionenabled") is False
                else "absent (default false)"
            )
            names = ", ".join(
                f"{q.path} ({short_duration(q.quota_preemption_delay)})" for q in delayed
            )
            warnings.append(
                f"line {part_obj.line}: {where}: quota preemption delays are set on {names} but "
                f"preemption.quotapreemptionenabled is {state}, so quota preemption never fires "
                "in this partition; set preemption: {quotapreemptionenabled: true}"
            )
    raw = {k: _plain(v) for k, v in part_obj.fields.items() if k != "queues" and v is not None}
    raw["name"] = name
    return PartitionSpec(
        name=name,
        quota_preemption_enabled=qp_enabled,
        preemption_enabled=True if enabled_flag is None else bool(enabled_flag),
        root=spec_root,
        placement_rules=_plain(part_obj.get("placementrules") or []),
        raw=raw,
    )


def _iter_q(q: _Q) -> Iterator[_Q]:
    yield q
    for c in q.children:
        yield from _iter_q(c)


def _check_queue_limits(q: _Q) -> None:
    _check_limits(q.obj.get("limits"), f"queue {q.path}", q)
    for child in q.children:
        _check_queue_limits(child)


# ------------------------------------------------------------------ entry point


def config_checksum(text: str) -> str:
    """The scheduler's checksum: upper-case SHA-256 of the text without a checksum line.

    Mirrors ``GetConfigurationString``: a ``checksum:`` line in the first or last
    80 bytes is cut out (with what precedes ``partitions:`` or follows the line).
    """
    data = text.encode("utf-8")
    window = 80
    key = b"checksum:"
    idx = data[:window].find(key)
    if idx == -1:
        tail = max(len(data) - window, 0)
        found = data[tail:].find(key)
        idx = tail + found if found != -1 else -1
    if idx != -1:
        start = data.find(b"partitions:")
        if start == -1:
            data = b""
        elif idx < start:
            data = data[start:]
        else:
            data = data[:idx]
    return hashlib.sha256(data).hexdigest().upper()


def _decode_text(data: bytes | str, filename: str) -> str:
    if isinstance(data, str):
        if len(data) > MAX_CONFIG_BYTES:
            raise ImportFailure(
                f"the config is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB", filename
            )
        data = data.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_CONFIG_BYTES:
        raise ImportFailure(
            f"the config is {len(data)} bytes, larger than the {MAX_CONFIG_BYTES // (1024 * 1024)} "
            "MiB limit",
            filename,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailure(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the "
            "file as UTF-8",
            line_location(line),
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _is_configmap(node: YNode | None) -> bool:
    if not isinstance(node, YMap):
        return False
    keys = {k.text for k, _ in node.pairs}
    return "data" in keys and ("kind" in keys or "apiVersion" in keys) and "partitions" not in keys


def _unwrap_configmap(
    node: YMap, warnings: list[str]
) -> tuple[str, int, dict[str, str], dict[str, Any]]:
    """The queues.yaml text, its line offset, the other settings and the metadata."""
    fields = {k.text: (k, v) for k, v in node.pairs}
    kind = fields.get("kind")
    if kind is not None and isinstance(kind[1], YScalar) and kind[1].text != "ConfigMap":
        raise _fail(f"a Kubernetes {kind[1].text}, not a ConfigMap", kind[1].line)
    data_key, data = fields["data"]
    if not isinstance(data, YMap):
        raise _fail("ConfigMap data must be a mapping of file names to text", data.line)
    extra: dict[str, str] = {}
    queues_text: str | None = None
    offset = 0
    for key, value in data.pairs:
        if not isinstance(value, YScalar):
            raise _fail(f"ConfigMap data.{key.text} must be text", value.line)
        if key.text == "queues.yaml":
            queues_text = value.text
            # a literal block starts on the line after its indicator
            offset = value.line if value.style in ("|", ">") else 0
        elif key.text.endswith(".yaml"):
            warnings.append(
                f"line {key.line}: ConfigMap data.{key.text} is ignored (only queues.yaml holds "
                "the queue config of the default policy group)"
            )
        else:
            extra[key.text] = value.text
    if queues_text is None:
        raise _fail("ConfigMap data has no queues.yaml entry", data_key.line)
    meta: dict[str, Any] = {}
    if "metadata" in fields and isinstance(fields["metadata"][1], YMap):
        for k, v in fields["metadata"][1].pairs:
            if isinstance(v, YScalar) and k.text in ("name", "namespace"):
                meta[k.text] = v.text
    return queues_text, offset, extra, meta


def parse_config(
    data: bytes | str, *, filename: str = "queues.yaml", seed_rule_warns: bool = False
) -> ConfigImport:
    """Read and validate a YuniKorn queue config (queues.yaml or its ConfigMap).

    Args:
        data: the file content; capped at :data:`MAX_CONFIG_BYTES` before parsing.
        filename: used in messages and kept on the result.
        seed_rule_warns: report the quota-change seed's rule (max above guaranteed when
            a delay is set), which the scheduler does not enforce, as a warning instead
            of refusing the config (a plan shows it; an import refuses it).

    Returns:
        The partitions (queue names lower-cased), warnings, the queues.yaml
        text and its checksum, and the ConfigMap's other settings.

    Raises:
        ImportFailure: naming the line, for anything the scheduler (or the
            quota-change seed) would refuse.
    """
    text = _decode_text(data, filename)
    warnings: list[str] = []
    node = load_nodes(text)
    source: Literal["queues.yaml", "configmap"] = "queues.yaml"
    extra: dict[str, str] = {}
    meta: dict[str, Any] | None = None
    if _is_configmap(node):
        assert isinstance(node, YMap)
        text, offset, extra, meta = _unwrap_configmap(node, warnings)
        source = "configmap"
        node = load_nodes(text, line_offset=offset)
    if node is None:
        raise ImportFailure("the config is empty: it defines no partitions", filename)
    if not isinstance(node, YMap):
        raise _fail(
            f"cannot unmarshal {kind_name(node)} into configs.SchedulerConfig (expected a mapping "
            "with partitions:)",
            node.line,
        )
    top = _decode_struct(node, _SCHEDULER_CONFIG)
    assert top is not None
    partitions_raw = [p for p in (top.get("partitions") or []) if p is not None]
    if not partitions_raw:
        raise _fail("the config defines no partitions", top.line)
    seen: dict[str, int] = {}
    partitions = tuple(
        _partition(p, seen, warnings, seed_rule_warns=seed_rule_warns) for p in partitions_raw
    )
    return ConfigImport(
        partitions=partitions,
        warnings=tuple(warnings),
        text=text,
        checksum=config_checksum(text),
        extra=extra,
        source_format=source,
        filename=filename,
        configmap=meta,
    )


# ------------------------------------------------------------------ engine and diff


def to_queue_config(partition: PartitionSpec | QueueSpec) -> QueueConfig:
    """The engine's queue tree for a partition (children sorted by name).

    Properties are the queue's own (the engine applies YuniKorn's inheritance);
    the quota preemption delay is the effective one, so an unparsable own value
    stays 0 instead of inheriting.
    """
    spec = partition.root if isinstance(partition, PartitionSpec) else partition
    return QueueConfig(
        name=spec.name,
        guaranteed=None if spec.guaranteed is None else dict(spec.guaranteed),
        max=None if spec.max is None else dict(spec.max),
        properties=dict(spec.properties),
        quota_preemption_delay=spec.quota_preemption_delay,
        children=tuple(sorted((to_queue_config(c) for c in spec.children), key=lambda c: c.name)),
    )


def is_tighter(old: Mapping[str, int] | None, new: Mapping[str, int] | None) -> bool:
    """Whether a new max limits anything the old one did not (engine.md section 5).

    >>> is_tighter({"vcore": 14000}, {"vcore": 10000}), is_tighter(None, {"vcore": 1})
    (True, True)
    >>> is_tighter({"vcore": 10}, {"vcore": 12}), is_tighter({"vcore": 10}, None)
    (False, False)
    """
    if new is None:
        return False
    if old is None:
        return True
    return any(t not in old or q < old[t] for t, q in new.items())


def diff_partitions(
    old: Sequence[PartitionSpec], new: Sequence[PartitionSpec]
) -> list[ConfigChange]:
    """Per-queue changes between two sets of partitions."""
    out: list[ConfigChange] = []
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    for name in sorted(set(old_by) | set(new_by)):
        a, b = old_by.get(name), new_by.get(name)
        if a is None or b is None:
            out.append(
                ConfigChange(
                    name,
                    "",
                    "partition",
                    "added" if a is None else "removed",
                    None if a is None else name,
                    None if b is None else name,
                )
            )
            continue
        if a.quota_preemption_enabled != b.quota_preemption_enabled:
            out.append(
                ConfigChange(
                    name,
                    "",
                    "quota_preemption_enabled",
                    "changed",
                    a.quota_preemption_enabled,
                    b.quota_preemption_enabled,
                )
            )
        qa = {q.path: q for q in a.queues()}
        qb = {q.path: q for q in b.queues()}
        for path in sorted(set(qa) | set(qb)):
            out.extend(_diff_queue(name, path, qa.get(path), qb.get(path)))
    return out


def _diff_queue(
    part: str, path: str, a: QueueSpec | None, b: QueueSpec | None
) -> list[ConfigChange]:
    if a is None or b is None:
        kind: ChangeKind = "added" if a is None else "removed"
        change = ConfigChange(
            part,
            path,
            "queue",
            kind,
            None if a is None else path,
            None if b is None else path,
            is_decrease=a is None and b is not None and b.max is not None,
        )
        return [change]
    out: list[ConfigChange] = []
    for fname in ("max", "guaranteed"):
        ra, rb = getattr(a, fname), getattr(b, fname)
        if ra != rb:
            kind = "added" if ra is None else "removed" if rb is None else "changed"
            out.append(
                ConfigChange(
                    part,
                    path,
                    fname,
                    kind,
                    ra,
                    rb,
                    is_decrease=fname == "max" and is_tighter(ra, rb),
                )
            )
    delay_changed = a.quota_preemption_delay != b.quota_preemption_delay
    for key in sorted(set(a.properties) | set(b.properties)):
        pa, pb = a.properties.get(key), b.properties.get(key)
        if key == QUOTA_DELAY and delay_changed:
            continue  # reported once, as the effective delay below
        if pa != pb:
            kind = "added" if pa is None else "removed" if pb is None else "changed"
            out.append(ConfigChange(part, path, "property", kind, pa, pb, key=key))
    if delay_changed:
        da, db = a.quota_preemption_delay, b.quota_preemption_delay
        kind = "added" if da == 0 else "removed" if db == 0 else "changed"
        out.append(ConfigChange(part, path, "quota_preemption_delay", kind, da or None, db or None))
    if a.max_applications != b.max_applications:
        out.append(
            ConfigChange(
                part, path, "max_applications", "changed", a.max_applications, b.max_applications
            )
        )
    if a.child_template != b.child_template:
        out.append(
            ConfigChange(
                part, path, "child_template", "changed", a.child_template, b.child_template
            )
        )
    return out
