"""The scheduler's own config (``GET /ws/v1/config``) -> the ConfigImport of a queues.yaml.

What the endpoint serves (yunikorn-core ``pkg/webservice/handlers.go``,
``getClusterConfig``): the config in force, ``configs.ConfigContext.Get(policyGroup)``
(``pkg/common/configs/config.go`` ``SchedulerConfig``: ``Partitions`` and
``Checksum``; newer cores wrap it with ``Extra`` - the ConfigMap's other
settings - and ``DeadlockDetectionEnabled`` / ``DeadlockTimeoutSeconds``),
marshalled

* as JSON with ``encoding/json`` when the request says ``Accept: application/json``
  (the cluster source poller does): the structs carry no json tags, so keys are the
  Go field names (``Partitions``, ``Queues``, ``Resources``, ``Guaranteed``,
  ``Max``, ``Properties``, ``ChildTemplate``, ``PlacementRules``,
  ``NodeSortPolicy`` ...), nil maps and slices are ``null``;
* otherwise as YAML with ``yaml.v2``: the queues.yaml keys (lower-case field
  names), ``checksum:`` and, from the wrapper, ``extra:`` and the deadlock keys.

The answer is the config after the scheduler's own load (root inserted, its
``submitacl: "*"``), so a sound answer passes the queues.yaml validation unchanged.
It is turned into queues.yaml text (each line remembering the answer's key path it
came from) and read by :func:`dashboard.importers.config.parse_config`: the same
decoder and yunikorn-core rules as an upload, with messages naming the answer's
key path (``config.json: Partitions[0].Queues[0].Queues[2].Resources.Max``)
instead of a line of the generated text.  The checksum kept is the scheduler's
(that of the file it loaded, which is what an upload of the same file gets).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dashboard.importers.config.decoding import _SCHEDULER_CONFIG, _Struct
from dashboard.importers.config.reader import ConfigImport, _decode_text, parse_config
from dashboard.importers.config.specs import MAX_CONFIG_BYTES
from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json
from dashboard.importers.yamlnodes import YMap, YScalar, load_nodes

_WRAPPER = ("checksum", "extra", "deadlockdetectionenabled", "deadlocktimeoutseconds")
"""Top-level keys of the answer that are not queues.yaml keys."""

_LINE = re.compile(r"\bline (\d+)\b")

MAX_ANSWER_BYTES = 4 * MAX_CONFIG_BYTES
"""Largest answer read: JSON spells a config out at about twice its YAML size; the
queues.yaml made from it is then held to :data:`MAX_CONFIG_BYTES` like an upload."""


def parse_config_answer(data: bytes | str, *, filename: str = "config.json") -> ConfigImport:
    """Read a ``/ws/v1/config`` answer (its JSON or its YAML form) as a validated config.

    Returns:
        The ConfigImport a queues.yaml upload of the same config gets, with
        ``source_format`` ``"scheduler"``, the scheduler's checksum (computed from
        the text when the answer has none) and its ``Extra`` settings.

    Raises:
        ImportFailure: naming the file and the answer's key path (JSON) or line (YAML).
    """
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogatepass")
    size = len(data)
    if size > MAX_ANSWER_BYTES:
        raise ImportFailure(
            f"the answer is {size} bytes, larger than the {MAX_ANSWER_BYTES // 2**20} MiB limit "
            "of a /ws/v1/config answer",
            filename,
        )
    if data.lstrip().startswith(b"{"):
        return config_from_json(load_json(filename, data), filename=filename)
    return _from_yaml(_decode_text(data, filename), filename)


def config_from_json(doc: Any, *, filename: str = "config.json", base: str = "") -> ConfigImport:
    """A decoded JSON ``/ws/v1/config`` answer (or a state dump's ``config``) -> ConfigImport.

    *base* is the key path of *doc* inside *filename* (``config`` in a state dump).
    """
    prefix = f"{base}." if base else ""
    if not isinstance(doc, dict):
        raise ImportFailure(
            f"expected the scheduler's config (an object with Partitions), got {_kind(doc)}",
            f"{filename}: {base}" if base else filename,
        )
    warnings: list[str] = []
    out = _Emitter(filename)
    partitions = None
    checksum = ""
    extra: dict[str, str] = {}
    for key, value in doc.items():
        name = key.lower()
        where = f"{prefix}{key}"
        if name == "partitions":
            partitions = value
            out.field("partitions", value, _SCHEDULER_CONFIG.fields["partitions"], where, 0)
        elif name == "checksum":
            if value is not None and not isinstance(value, str):
                raise out.fail(where, f"expected a string, got {_kind(value)}")
            checksum = value or ""
        elif name == "extra":
            extra = _string_map(value, where, out)
        elif name in _WRAPPER:
            continue  # the deadlock detector's settings: not part of the queue config
        else:
            warnings.append(f"{filename}: {where}: not a field of the scheduler's config; ignored")
    if partitions is None:
        raise out.fail(f"{prefix}Partitions", "missing: not a /ws/v1/config answer (no Partitions)")
    text = out.text()
    parsed = _parse_mapped(text, filename, out.where)
    return replace(
        parsed,
        warnings=(*parsed.warnings, *warnings),
        checksum=checksum.upper() or parsed.checksum,
        extra=extra,
        source_format="scheduler",
        filename=filename,
    )


def _from_yaml(text: str, filename: str) -> ConfigImport:
    """The YAML form: the queues.yaml keys plus the wrapper's, whose lines are blanked
    (so every other line keeps its number) before the queues.yaml validation."""
    node = load_nodes(text)
    checksum = ""
    extra: dict[str, str] = {}
    lines = text.split("\n")
    if isinstance(node, YMap):
        keys = [k.line for k, _ in node.pairs]
        for i, (key, value) in enumerate(node.pairs):
            name = key.text.lower()
            if name not in _WRAPPER:
                continue
            if name == "checksum" and isinstance(value, YScalar):
                checksum = value.text
            elif name == "extra" and isinstance(value, YMap):
                extra = {k.text: v.text if isinstance(v, YScalar) else "" for k, v in value.pairs}
            end = keys[i + 1] - 1 if i + 1 < len(keys) else len(lines)
            for n in range(key.line - 1, end):
                lines[n] = ""
    cleaned = "\n".join(lines).rstrip() + "\n"
    try:
        parsed = parse_config(cleaned, filename=filename)
    except ImportFailure as exc:
        where = f"{filename}: {exc.location}" if exc.location else filename
        raise ImportFailure(exc.message, where) from None
    return replace(
        parsed,
        checksum=checksum.upper() or parsed.checksum,
        extra=extra,
        source_format="scheduler",
    )


def _parse_mapped(text: str, filename: str, where: Callable[[int], str]) -> ConfigImport:
    """parse_config on generated text, its line numbers turned into the answer's key paths."""

    def named(message: str) -> str:
        return _LINE.sub(lambda m: where(int(m.group(1))), message)

    try:
        parsed = parse_config(text, filename=filename)
    except ImportFailure as exc:
        location = named(exc.location) if exc.location else ""
        raise ImportFailure(
            named(exc.message), f"{filename}: {location}" if location else filename
        ) from None
    return replace(parsed, warnings=tuple(f"{filename}: {named(w)}" for w in parsed.warnings))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _string_map(value: Any, where: str, out: _Emitter) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise out.fail(where, f"expected an object of strings, got {_kind(value)}")
    for k, v in value.items():
        if not isinstance(v, str):
            raise out.fail(f"{where}.{k}", f"expected a string, got {_kind(v)}")
    return dict(value)


class _Emitter:
    """Writes the answer as block-style queues.yaml, one source key path per line."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: list[str] = []
        self.paths: list[str] = []

    def fail(self, where: str, message: str) -> ImportFailure:
        return ImportFailure(message, f"{self.filename}: {where}")

    def where(self, line: int) -> str:
        """The answer's key path of generated line *line* (1-based)."""
        if 1 <= line <= len(self.paths):
            return self.paths[line - 1]
        return "(end of the answer)"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def _put(self, line: str, where: str) -> None:
        self.lines.append(line)
        self.paths.append(where)

    def field(self, name: str, value: Any, schema: Any, where: str, indent: int) -> None:
        """``name: value`` at *indent*; a null value writes nothing (Go's zero value)."""
        pad = " " * indent
        if value is None:
            return
        if isinstance(schema, _Struct):
            if not isinstance(value, dict):
                raise self.fail(where, f"expected an object ({schema.go_name}), got {_kind(value)}")
            if not value:
                self._put(f"{pad}{name}: {{}}", where)
                return
            self._put(f"{pad}{name}:", where)
            self.struct(value, schema, where, indent + 2)
        elif isinstance(schema, tuple) and schema[0] == "list":
            if not isinstance(value, list):
                raise self.fail(where, f"expected a list, got {_kind(value)}")
            if not value:
                self._put(f"{pad}{name}: []", where)
                return
            self._put(f"{pad}{name}:", where)
            for i, item in enumerate(value):
                self.item(item, schema[1], f"{where}[{i}]", indent)
        elif isinstance(schema, tuple):
            if not isinstance(value, dict):
                raise self.fail(where, f"expected an object, got {_kind(value)}")
            if not value:
                self._put(f"{pad}{name}: {{}}", where)
                return
            self._put(f"{pad}{name}:", where)
            for k, v in value.items():
                self._put(
                    f"{pad}  {json.dumps(k)}: {self.scalar(v, schema[1], f'{where}.{k}')}",
                    f"{where}.{k}",
                )
        else:
            self._put(f"{pad}{name}: {self.scalar(value, schema, where)}", where)

    def struct(self, value: dict[str, Any], schema: _Struct, where: str, indent: int) -> None:
        seen: dict[str, str] = {}
        for key, sub_value in value.items():
            name = key.lower()
            sub = schema.fields.get(name)
            if sub is None:
                known = ", ".join(_go_name(f) for f in schema.fields)
                raise self.fail(
                    f"{where}.{key}",
                    f"field {key} not found in type {schema.go_name} (known fields: {known})",
                )
            if name in seen:
                raise self.fail(f"{where}.{key}", f"{key} repeats {seen[name]}")
            seen[name] = key
            self.field(name, sub_value, sub, f"{where}.{key}", indent)

    def item(self, value: Any, schema: Any, where: str, indent: int) -> None:
        pad = " " * indent
        if value is None:
            self._put(f"{pad}- null", where)
            return
        if isinstance(schema, _Struct):
            if not isinstance(value, dict):
                raise self.fail(where, f"expected an object ({schema.go_name}), got {_kind(value)}")
            if not value:
                self._put(f"{pad}- {{}}", where)
                return
            start = len(self.lines)
            self.struct(value, schema, where, indent + 2)
            if len(self.lines) == start:  # every field null
                self._put(f"{pad}- {{}}", where)
                return
            self.lines[start] = f"{pad}- " + self.lines[start][indent + 2 :]
            return
        self._put(f"{pad}- {self.scalar(value, schema, where)}", where)

    def scalar(self, value: Any, kind: Any, where: str) -> str:
        if kind == "string":
            if not isinstance(value, str):
                raise self.fail(where, f"expected a string, got {_kind(value)}")
            return json.dumps(value)
        if kind == "bool":
            if not isinstance(value, bool):
                raise self.fail(where, f"expected true or false, got {_kind(value)}")
            return "true" if value else "false"
        if kind == "uint64":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise self.fail(where, f"expected a whole number >= 0, got {_kind(value)}")
            return str(value)
        if kind == "float64":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.fail(where, f"expected a number, got {_kind(value)}")
            return repr(float(value))
        raise self.fail(where, f"expected a single value, got {_kind(value)}")


def _go_name(yaml_name: str) -> str:
    """The Go field name of a queues.yaml key, as ``encoding/json`` writes it."""
    return _GO_NAMES.get(yaml_name, yaml_name[:1].upper() + yaml_name[1:])


_GO_NAMES = {
    "maxapplications": "MaxApplications",
    "adminacl": "AdminACL",
    "submitacl": "SubmitACL",
    "childtemplate": "ChildTemplate",
    "placementrules": "PlacementRules",
    "nodesortpolicy": "NodeSortPolicy",
    "usergroupresolver": "UserGroupResolver",
    "quotapreemptionenabled": "QuotaPreemptionEnabled",
    "resourceweights": "ResourceWeights",
    "maxresources": "MaxResources",
}
