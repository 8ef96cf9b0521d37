"""The strict decoder of yunikorn-core's config structs: Go field names, no unknown keys."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dashboard.importers.config.specs import PREEMPTION_DELAY, QUOTA_DELAY
from dashboard.importers.errors import ImportFailure, line_location
from dashboard.importers.quantities import (
    short_duration,
)
from dashboard.importers.yamlnodes import YMap, YNode, YScalar, YSeq, kind_name

_BARE_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?")


# yaml.v3 compatibility: a YAML 1.1 boolean word is accepted when the Go field is a bool.
_BOOL_TRUE = frozenset({"true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON"})


_BOOL_FALSE = frozenset(
    {"false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"}
)


_PLAIN_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})


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
