"""Cluster snapshots: our scenario JSON, YuniKorn REST responses, or the full state dump.

:func:`parse_snapshot` takes a mapping *file name -> bytes* and recognises each
file by its content (not only its name):

- a scenario JSON (scenario-format.md), alone;
- YuniKorn REST responses: ``/partition/{p}/queues`` (one object, required),
  ``/nodes``, ``/applications/{active|completed}``, ``/queue/{q}/applications``,
  ``/partitions``, ``/config`` (JSON), ``/placementrules`` and
  ``/events/batch`` (recognised, not needed);
- the state dump (``/debug/fullstatedump``), which wins over REST files
  given with it.

It returns a scenario-format cluster (without ``request``) that
``python -m engine`` accepts, the pending asks, the applications, the
scheduler's own per-queue figures for cross-checking, and warnings.

The README of the fixtures lists the surprises honoured here: one queue
object, ``partition`` only on root, absent = false/empty, priority as a
string, nanosecond times except the application ``startTime`` (milliseconds,
Go zero time for "never"), preempted allocations still counted in the
scheduler's ``allocatedResource`` (kept with ``preempted: true``; the contract
subtracts them and we cross-check ``preemptingResource``), zero-dropping node
capacity, all-zero max/guaranteed meaning "not set", effective (inherited)
properties with evaluated fields, allow-preemption only in the state dump's
shim cache, required-node from the allocation tag, dynamic queues.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dashboard.importers.errors import ImportFailure
from dashboard.importers.quantities import (
    QuantityError,
    check_resource_type,
    format_resource,
)
from engine.durations import DurationSyntaxError, read_go_duration
from engine.errors import ScenarioError
from engine.scenario import parse_scenario

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""Largest snapshot accepted (all files together), checked before any parsing."""

MAX_JSON_DEPTH = 100
"""Deepest JSON nesting accepted (a queue level uses two: ``children`` and the object)."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
GO_ZERO_TIME_MS = -62135596800000
"""Go's zero ``time.Time`` as Unix milliseconds: an application that never started."""

TAG_REQUIRED_NODE = "yunikorn.apache.org/requiredNode"
TAG_QUEUE = "kubernetes.io/label/queue"
TAG_NAMESPACE = "kubernetes.io/meta/namespace"
TAG_POD = "kubernetes.io/meta/podName"
ANNOTATION_ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"

Kind = Literal["scenario", "rest", "statedump"]

_TRUE_WORDS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE_WORDS = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-@:+=~")


@dataclass(frozen=True)
class SnapshotImport:
    """A validated cluster snapshot (see the module docstring).

    ``scenario`` is a scenario-format document without ``request``;
    :func:`dashboard.importers.export.scenario_json` adds one.  ``asks`` are
    pending asks in the contract's ask shape (plus ``triggered_preemption``
    and ``pod`` when known); ``queue_usage`` maps a queue path to what the
    scheduler reported (``allocated``, ``preempting``, ``usage`` =
    allocated - preempting, ``pending``, ``headroom``, ...), or, for a scenario
    import, to the sums computed from its allocations.
    """

    kind: Kind
    partition: str
    captured_at: float | None
    scenario: dict[str, Any]
    asks: tuple[dict[str, Any], ...]
    applications: tuple[dict[str, Any], ...]
    queue_usage: dict[str, dict[str, Any]]
    warnings: tuple[str, ...]
    files: tuple[str, ...] = ()
    cluster_id: str | None = None
    events: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "partition": self.partition,
            "captured_at": self.captured_at,
            "scenario": self.scenario,
            "asks": list(self.asks),
            "applications": list(self.applications),
            "queue_usage": self.queue_usage,
            "warnings": list(self.warnings),
            "files": list(self.files),
            "cluster_id": self.cluster_id,
        }


# ------------------------------------------------------------------ safe JSON


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; only an object with a repeated key is walked again
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"duplicate key {k!r}")
            seen.add(k)
    return out


def load_json(name: str, data: bytes) -> Any:
    """Decode one JSON file safely: UTF-8 only, no NaN, no duplicate keys, bounded depth."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailure(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", name
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ImportFailure(
            f"invalid JSON: {exc.msg}", f"{name}: line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ImportFailure(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", name) from None
    except ValueError as exc:
        raise ImportFailure(f"invalid JSON: {exc}", name) from None
    _check_depth(doc, name)
    return doc


def _check_depth(doc: Any, name: str) -> None:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ImportFailure(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", name)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))


# ------------------------------------------------------------------ typed access


def _tname(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object"


def _loc(file: str, path: str) -> str:
    return f"{file}: {path}" if path else file


class _Reader:
    """Typed access to one file's JSON with error locations ``file: json.path``."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> ImportFailure:
        return ImportFailure(message, _loc(self.file, path))

    def obj(self, v: object, path: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(path, f"must be an object, not {_tname(v)}")
        return v

    def arr(self, v: object, path: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(path, f"must be a list, not {_tname(v)}")
        return v

    def string(self, v: object, path: str, *, required: bool = True) -> str:
        if v is None and not required:
            return ""
        if not isinstance(v, str):
            raise self.fail(
                path, "is required" if v is None else f"must be a string, not {_tname(v)}"
            )
        return v

    def key(self, v: object, path: str) -> str:
        s = self.string(v, path)
        if not s:
            raise self.fail(path, "must not be empty")
        return s

    def integer(self, v: object, path: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise self.fail(path, f"must be an integer, not {_tname(v)}")
        if not lo <= v <= hi:
            raise self.fail(path, f"{v} is out of range ({lo} .. {hi})")
        return v

    def flag(self, d: Mapping[str, Any], k: str, path: str, default: bool = False) -> bool:
        # omitempty: an absent boolean is false
        v = d.get(k)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(f"{path}.{k}", f"must be true or false, not {_tname(v)}")
        return v

    def resource(self, v: object, path: str, *, negative: bool = False) -> dict[str, int]:
        """A REST resource map; quantities are int64, non-negative unless *negative*."""
        if v is None:
            return {}
        d = self.obj(v, path)
        out: dict[str, int] = {}
        for t, q in d.items():
            try:
                check_resource_type(t)
            except QuantityError as exc:
                raise self.fail(f"{path}.{t}", str(exc)) from None
            if isinstance(q, bool) or not isinstance(q, int):
                if isinstance(q, float) and q.is_integer():
                    q = int(q)
                else:
                    raise self.fail(f"{path}.{t}", f"quantity must be an integer, not {_tname(q)}")
            if q > INT64_MAX or q < INT64_MIN:
                raise self.fail(f"{path}.{t}", f"quantity {q} is beyond int64 (absurd)")
            if q < 0 and not negative:
                raise self.fail(f"{path}.{t}", f"negative quantity {q}")
            out[t] = q
        return out

    def priority(self, v: object, path: str) -> int:
        # AllocationDAOInfo.Priority is a string ("-10"); accept a number too
        if v is None:
            return 0
        if isinstance(v, str):
            text = v.strip()
            if not text or not text.lstrip("+-").isdigit() or not text.isascii():
                raise self.fail(path, f"priority {v!r} is not an integer")
            v = int(text)
        return self.integer(v, path, INT32_MIN, INT32_MAX)

    def time_ns(self, v: object, path: str) -> float | None:
        if v is None:
            return None
        ns = self.integer(v, path)
        return ns / 1e9


def _drop_zeros(r: Mapping[str, int]) -> dict[str, int]:
    return {t: q for t, q in r.items() if q != 0}


def _add_into(acc: dict[str, int], r: Mapping[str, int]) -> None:
    for t, q in r.items():
        acc[t] = acc.get(t, 0) + q


def _sub(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for t, q in b.items():
        out[t] = out.get(t, 0) - q
    return _drop_zeros(out)


# ------------------------------------------------------------------ shape detection

_SHAPES = (
    "scenario",
    "statedump",
    "queues",
    "queue",
    "nodes",
    "applications",
    "partitions",
    "config",
    "events",
    "placementrules",
    "empty",
)


def classify(name: str, doc: Any) -> str:
    """Which kind of document *doc* is, by content (the file name only breaks ties)."""
    if isinstance(doc, dict):
        if isinstance(doc.get("queues"), list) and (
            "rmDiagnostics" in doc or "clusterInfo" in doc or "partitions" in doc
        ):
            return "statedump"
        if isinstance(doc.get("queues"), dict) and "queuename" not in doc:
            return "scenario"
        if "queuename" in doc:
            return "queues" if not doc.get("parent") and doc.get("queuename") == "root" else "queue"
        if "Partitions" in doc:
            return "config"
        if "EventRecords" in doc:
            return "events"
    if isinstance(doc, list):
        if not doc:
            return "empty"
        first = doc[0]
        if isinstance(first, dict):
            if "nodeID" in first:
                return "nodes"
            if "applicationID" in first:
                return "applications"
            if "clusterId" in first and ("capacity" in first or "totalNodes" in first):
                return "partitions"
            if "name" in first and ("parameters" in first or "parentRule" in first):
                return "placementrules"
            if "queuename" in first:
                raise ImportFailure(
                    "a list of queues: GET /ws/v1/partition/{p}/queues returns ONE object (the "
                    "root with nested children), not a list as the YuniKorn site example shows",
                    name,
                )
    raise ImportFailure(
        "not a scenario JSON, a YuniKorn REST response or a state dump (unrecognised shape: "
        f"{_tname(doc)}"
        + (f" with keys {', '.join(sorted(doc)[:6])}" if isinstance(doc, dict) else "")
        + ")",
        name,
    )


# ------------------------------------------------------------------ entry point


def parse_snapshot(
    files: Mapping[str, bytes],
    *,
    partition: str | None = None,
    max_bytes: int = MAX_SNAPSHOT_BYTES,
) -> SnapshotImport:
    """Import a cluster snapshot from one or more files.

    Args:
        files: file name -> content.
        partition: which partition to take when a dump holds several
            (default: the only one, else ``default``).
        max_bytes: the largest total accepted (a poller of a big cluster passes its
            own bound; uploads keep the default).

    Raises:
        ImportFailure: naming the file and the JSON key, for anything that
            cannot become a valid scenario.
    """
    if not files:
        raise ImportFailure("no files given")
    total = sum(len(b) for b in files.values())
    if total > max_bytes:
        raise ImportFailure(
            f"the snapshot is {total} bytes, larger than the limit of {max_bytes} bytes "
            f"({max_bytes / 2**20:g} MiB)"
        )
    docs: dict[str, list[tuple[str, Any]]] = {s: [] for s in _SHAPES}
    for name in sorted(files):
        doc = load_json(name, files[name])
        docs[classify(name, doc)].append((name, doc))
    if docs["scenario"]:
        others = [n for s, items in docs.items() if s != "scenario" for n, _ in items]
        if len(docs["scenario"]) > 1 or others:
            names = [n for n, _ in docs["scenario"]] + others
            raise ImportFailure("a scenario JSON must be imported alone, got " + ", ".join(names))
        return _from_scenario(*docs["scenario"][0])
    return _from_yunikorn(docs, partition)


def _from_scenario(name: str, doc: dict[str, Any]) -> SnapshotImport:
    checked = dict(doc)
    if checked.get("request") is None:
        checked["request"] = {"type": "resources", "queue": "root"}
    try:
        parsed = parse_scenario(checked, default_now=0.0)
    except ScenarioError as exc:
        raise ImportFailure(exc.message, _loc(name, exc.field)) from None
    _check_type_names(name, parsed)
    scenario = {k: v for k, v in doc.items() if k != "request"}
    request = doc.get("request") or {}
    asks: list[dict[str, Any]] = []
    if request.get("type") == "preempt" and isinstance(request.get("ask"), dict):
        asks.append(dict(request["ask"]))
    elif request.get("type") == "round" and isinstance(request.get("asks"), list):
        asks.extend(dict(a) for a in request["asks"])
    usage: dict[str, dict[str, Any]] = {}
    apps: dict[str, dict[str, Any]] = {}
    paths = _paths(parsed.cluster.root)
    for path in paths:
        usage[path] = {"allocated": {}, "preempting": {}, "usage": {}}
    for a in parsed.cluster.allocations:
        parts = a.queue.split(".")
        for i in range(1, len(parts) + 1):
            u = usage[".".join(parts[:i])]
            _add_into(u["allocated"], a.resources)
            if a.preempted:
                _add_into(u["preempting"], a.resources)
        if a.app:
            app = apps.setdefault(a.app, {"id": a.app, "queue": a.queue, "allocations": 0})
            app["allocations"] += 1
    for u in usage.values():
        u["allocated"] = _drop_zeros(u["allocated"])
        u["preempting"] = _drop_zeros(u["preempting"])
        u["usage"] = _sub(u["allocated"], u["preempting"])
    now = doc.get("now")
    partition_name = (
        scenario.get("partition", {}).get("name", "default")
        if isinstance(scenario.get("partition"), dict)
        else "default"
    )
    return SnapshotImport(
        kind="scenario",
        partition=str(partition_name),
        captured_at=float(now)
        if isinstance(now, int | float) and not isinstance(now, bool)
        else None,
        scenario=scenario,
        asks=tuple(asks),
        applications=tuple(apps[k] for k in sorted(apps)),
        queue_usage=usage,
        warnings=(),
        files=(name,),
    )


def _check_type_names(name: str, parsed: Any) -> None:
    """Refuse an empty resource type name anywhere in a scenario (the config side refuses it
    too; the engine contract takes any *name*, and an empty string is none)."""

    def check(resource: Any, field: str) -> None:
        if resource is not None and "" in resource:
            raise ImportFailure("empty resource type name", _loc(name, field))

    stack: list[tuple[Any, str]] = [(parsed.cluster.root, parsed.cluster.root.name)]
    while stack:
        q, path = stack.pop()
        check(q.guaranteed, f"queue {path} guaranteed")
        check(q.max, f"queue {path} max")
        stack.extend((c, f"{path}.{c.name}") for c in q.children)
    for i, n in enumerate(parsed.cluster.nodes):
        check(n.capacity, f"nodes[{i}].capacity")
    for i, a in enumerate(parsed.cluster.allocations):
        check(a.resources, f"allocations[{i}].resources")
    for i, a in enumerate(getattr(parsed.request, "asks", ()) or ()):
        check(a.resources, f"request.asks[{i}].resources")
    ask = getattr(parsed.request, "ask", None)
    if ask is not None:
        check(ask.resources, "request.ask.resources")


def _paths(root: Any) -> list[str]:
    out: list[str] = []
    stack: list[tuple[Any, str]] = [(root, root.name)]
    while stack:
        q, path = stack.pop()
        out.append(path)
        stack.extend((c, f"{path}.{c.name}") for c in q.children)
    return sorted(out)


# ------------------------------------------------------------------ YuniKorn assembly


@dataclass
class _Sources:
    """The pieces of a YuniKorn import, wherever they came from."""

    kind: Kind
    tree: tuple[str, str, dict[str, Any]] | None = None  # file, json path, root object
    nodes: tuple[str, str, list[Any]] | None = None
    apps: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    partitions: tuple[str, str, list[Any]] | None = None
    config: tuple[str, str, dict[str, Any]] | None = None
    diagnostics: tuple[str, dict[str, Any]] | None = None
    captured_at: float | None = None
    cluster_id: str | None = None
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    events: dict[str, Any] | None = None


def _pick_partition(candidates: list[tuple[str, int]], wanted: str | None, file: str) -> int:
    names = [n for n, _ in candidates]
    if wanted is not None:
        for n, i in candidates:
            if n == wanted:
                return i
        raise ImportFailure(f"no partition {wanted!r} (found: {', '.join(names) or 'none'})", file)
    if len(candidates) == 1:
        return candidates[0][1]
    for n, i in candidates:
        if n == "default":
            return i
    raise ImportFailure(
        f"several partitions ({', '.join(names)}) and none called default; choose one", file
    )


def _statedump_sources(name: str, doc: dict[str, Any], wanted: str | None) -> tuple[_Sources, str]:
    r = _Reader(name)
    src = _Sources(kind="statedump", files=[name])
    trees = r.arr(doc.get("queues"), "queues")
    candidates = []
    for i, t in enumerate(trees):
        t = r.obj(t, f"queues[{i}]")
        candidates.append(
            (r.string(t.get("partition"), f"queues[{i}].partition", required=False) or "default", i)
        )
    if not candidates:
        raise r.fail("queues", "the state dump holds no queue tree")
    idx = _pick_partition(candidates, wanted, name)
    part = candidates[idx][0]
    src.tree = (name, f"queues[{idx}]", trees[idx])
    if doc.get("nodes") is not None:
        for i, entry in enumerate(r.arr(doc["nodes"], "nodes")):
            entry = r.obj(entry, f"nodes[{i}]")
            if (entry.get("partitionName") or "default") == part:
                src.nodes = (
                    name,
                    f"nodes[{i}].nodesInfo",
                    r.arr(entry.get("nodesInfo") or [], f"nodes[{i}].nodesInfo"),
                )
    if doc.get("applications") is not None:
        src.apps.append((name, "applications", r.arr(doc["applications"], "applications")))
    if doc.get("partitions") is not None:
        src.partitions = (name, "partitions", r.arr(doc["partitions"], "partitions"))
    if isinstance(doc.get("config"), dict):
        src.config = (name, "config", doc["config"])
    if isinstance(doc.get("rmDiagnostics"), dict):
        src.diagnostics = (name, doc["rmDiagnostics"])
    else:
        src.warnings.append(
            f"{name}: no rmDiagnostics (shim cache): allow-preemption opt-outs are unknown and "
            "assumed true"
        )
    if doc.get("timestamp") is not None:
        src.captured_at = r.time_ns(doc["timestamp"], "timestamp")
    infos = doc.get("clusterInfo")
    if isinstance(infos, list) and infos and isinstance(infos[0], dict):
        builds = infos[0].get("rmBuildInformation")
        if isinstance(builds, list) and builds and isinstance(builds[0], dict):
            rm = builds[0].get("rmId")
            src.cluster_id = rm if isinstance(rm, str) else None
    return src, part


def _from_yunikorn(docs: dict[str, list[tuple[str, Any]]], wanted: str | None) -> SnapshotImport:
    if len(docs["statedump"]) > 1:
        raise ImportFailure(
            "more than one state dump: " + ", ".join(n for n, _ in docs["statedump"])
        )
    if docs["statedump"]:
        name, doc = docs["statedump"][0]
        src, part = _statedump_sources(name, doc, wanted)
        ignored = [n for s, items in docs.items() if s != "statedump" for n, _ in items]
        if ignored:
            src.warnings.append(
                "the state dump is used; these files were ignored: " + ", ".join(ignored)
            )
    else:
        src = _Sources(kind="rest")
        if not docs["queues"]:
            single = [n for n, _ in docs["queue"]]
            hint = (
                f" ({', '.join(single)} holds a single queue without its subtree)" if single else ""
            )
            raise ImportFailure(
                "a REST snapshot needs the whole queue tree: GET "
                "/ws/v1/partition/{partition}/queues (partition_queues.json), or a state dump"
                + hint
            )
        if len(docs["queues"]) > 1:
            raise ImportFailure(
                "more than one queue tree: " + ", ".join(n for n, _ in docs["queues"])
            )
        qname, qdoc = docs["queues"][0]
        src.tree = (qname, "", qdoc)
        part = (
            _Reader(qname).string(qdoc.get("partition"), "partition", required=False) or "default"
        )
        if wanted is not None and wanted != part:
            raise ImportFailure(f"the queue tree is for partition {part!r}, not {wanted!r}", qname)
        src.files.append(qname)
        if len(docs["nodes"]) > 1:
            raise ImportFailure(
                "more than one nodes list: " + ", ".join(n for n, _ in docs["nodes"])
            )
        if docs["nodes"]:
            src.nodes = (docs["nodes"][0][0], "", docs["nodes"][0][1])
            src.files.append(docs["nodes"][0][0])
        for n, d in docs["applications"]:
            src.apps.append((n, "", d))
            src.files.append(n)
        if docs["partitions"]:
            n, d = docs["partitions"][0]
            src.partitions = (n, "", d)
            src.files.append(n)
        if docs["config"]:
            n, d = docs["config"][0]
            src.config = (n, "", d)
            src.files.append(n)
        for n, d in docs["events"]:
            src.events = d
            src.files.append(n)
        for n, _ in docs["queue"] + docs["placementrules"] + docs["empty"]:
            src.files.append(n)
        for n, _ in docs["empty"]:
            src.warnings.append(f"{n}: an empty list; nothing taken from it")
        src.warnings.append(
            "REST files carry no allow-preemption flag (only the state dump's shim cache "
            "does): every allocation is imported as allowing preemption"
        )
    return _assemble(src, part)


# ------------------------------------------------------------------ queues


def _check_queue_name(r: _Reader, name: str, path: str) -> None:
    if not name:
        raise r.fail(path, "empty queue name")
    if "." in name or not set(name) <= _NAME_CHARS or len(name) > 253:
        raise r.fail(path, f"invalid queue name {name!r}")


def _queue_tree(
    src: _Sources,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, bool]]:
    """The scenario queue tree, the reported per-queue figures, and path -> is_leaf."""
    assert src.tree is not None
    file, base, root = src.tree
    r = _Reader(file)
    usage: dict[str, dict[str, Any]] = {}
    leaves: dict[str, bool] = {}
    root = r.obj(root, base)
    name = r.key(root.get("queuename"), f"{base}.queuename" if base else "queuename")
    if name != "root":
        raise r.fail(
            f"{base}.queuename" if base else "queuename",
            f"the tree must start at root, not {name!r}",
        )
    out_root: dict[str, Any] = {}
    # iterative walk: (raw, json path, expected full path, output dict, parent managed)
    stack: list[tuple[dict[str, Any], str, str, dict[str, Any], bool]] = [
        (root, base, "root", out_root, True)
    ]
    while stack:
        raw, jp, path, out, parent_managed = stack.pop()
        pre = f"{jp}." if jp else ""
        qname = r.key(raw.get("queuename"), f"{pre}queuename")
        if qname != path:
            raise r.fail(f"{pre}queuename", f"expected {path!r} below its parent, got {qname!r}")
        leaf_name = path.rsplit(".", 1)[-1]
        _check_queue_name(r, leaf_name, f"{pre}queuename")
        out["name"] = leaf_name
        info = _queue_info(r, raw, pre, path, src.warnings)
        managed = info["is_managed"] and parent_managed
        for key in ("guaranteed", "max"):
            if info[key] is not None:
                out[key] = info[key]
        out["properties"] = info["engine_properties"]
        out["quota_preemption_delay"] = info["quota_preemption_delay"] if managed else 0.0
        if not managed:
            out["is_managed"] = False
        if info["status"] not in ("Active", ""):
            out["status"] = info["status"]
        del info["engine_properties"]
        usage[path] = info
        children_raw = raw.get("children")
        kids: list[dict[str, Any]] = []
        seen: set[str] = set()
        if children_raw is not None:
            for i, child in enumerate(r.arr(children_raw, f"{pre}children")):
                cjp = f"{pre}children[{i}]"
                child = r.obj(child, cjp)
                cname = r.key(child.get("queuename"), f"{cjp}.queuename")
                short = cname.rsplit(".", 1)[-1]
                if short in seen:
                    raise r.fail(f"{cjp}.queuename", f"duplicate queue {cname!r}")
                seen.add(short)
                cout: dict[str, Any] = {}
                kids.append(cout)
                stack.append((child, cjp, f"{path}.{short}", cout, managed))
        if kids:
            out["children"] = kids
        leaves[path] = not kids
    _sort_children(out_root)
    return out_root, usage, leaves


def _sort_children(root: dict[str, Any]) -> None:
    stack = [root]
    while stack:
        q = stack.pop()
        kids = q.get("children")
        if kids:
            kids.sort(key=lambda c: c["name"])
            stack.extend(kids)


def _queue_info(
    r: _Reader, raw: dict[str, Any], pre: str, path: str, warnings: list[str]
) -> dict[str, Any]:
    """The scheduler's figures for one queue, and the engine's view of its properties."""
    res = {}
    for key in ("allocatedResource", "preemptingResource", "pendingResource"):
        res[key] = _drop_zeros(r.resource(raw.get(key), f"{pre}{key}"))
    headroom = r.resource(raw.get("headroom"), f"{pre}headroom", negative=True)
    limits: dict[str, dict[str, int] | None] = {}
    for key, label in (("guaranteedResource", "guaranteed"), ("maxResource", "max")):
        value = r.resource(raw.get(key), f"{pre}{key}")
        if value and not any(value.values()):
            warnings.append(
                f"{r.file}: {path} {label} {format_resource(value)} has no positive value; the "
                "scheduler treats it as not set (imported as not set)"
            )
            value = {}
        limits[label] = value or None
    props_raw = r.obj(raw.get("properties") or {}, f"{pre}properties")
    props: dict[str, str] = {}
    for k, v in props_raw.items():
        props[k] = r.string(v, f"{pre}properties.{k}")
    engine_props = dict(props)
    # properties are the effective ones; the evaluated fields say what the scheduler uses
    if "preemptionEnabled" in raw or "isPreemptionFence" in raw:
        if r.flag(raw, "isPreemptionFence", pre.rstrip(".")):
            engine_props["preemption.policy"] = "fence"
        elif not r.flag(raw, "preemptionEnabled", pre.rstrip("."), default=True):
            engine_props["preemption.policy"] = "disabled"
        else:
            engine_props["preemption.policy"] = "default"
    if "isPriorityFence" in raw:
        fence = r.flag(raw, "isPriorityFence", pre.rstrip("."))
        engine_props["priority.policy"] = "fence" if fence else "default"
        offset = r.integer(
            raw.get("priorityOffset", 0), f"{pre}priorityOffset", INT32_MIN, INT32_MAX
        )
        engine_props["priority.offset"] = str(offset)
    pdelay = raw.get("preemptionDelay")
    if pdelay is not None:
        engine_props["preemption.delay"] = r.string(pdelay, f"{pre}preemptionDelay")
    qdelay: float
    reported = raw.get("quotaPreemptionDelay")
    prop_delay = props.get("quota.preemption.delay")
    prop_seconds: float | None = None
    if prop_delay is not None:
        try:
            prop_seconds = max(read_go_duration(prop_delay), 0.0)
        except DurationSyntaxError:
            prop_seconds = 0.0
    if reported is not None:
        text = r.string(reported, f"{pre}quotaPreemptionDelay")
        try:
            qdelay = max(read_go_duration(text), 0.0)
        except DurationSyntaxError as exc:
            raise r.fail(f"{pre}quotaPreemptionDelay", str(exc)) from None
        if prop_seconds is not None and prop_seconds != qdelay:
            warnings.append(
                f"{r.file}: {path} property quota.preemption.delay {prop_delay!r} is not what the "
                f"scheduler uses ({text}); quota preemption follows {text}"
            )
    else:
        qdelay = prop_seconds or 0.0
    managed = r.flag(raw, "isManaged", pre.rstrip("."), default=True)
    status = r.string(raw.get("status"), f"{pre}status", required=False)
    return {
        "allocated": res["allocatedResource"],
        "preempting": res["preemptingResource"],
        "usage": _sub(res["allocatedResource"], res["preemptingResource"]),
        "pending": res["pendingResource"],
        "headroom": headroom,
        "guaranteed": limits["guaranteed"],
        "max": limits["max"],
        "is_leaf": r.flag(raw, "isLeaf", pre.rstrip(".")),
        "is_managed": managed,
        "status": status,
        "properties": props,
        "preemption_enabled": r.flag(raw, "preemptionEnabled", pre.rstrip("."), default=True),
        "is_preemption_fence": r.flag(raw, "isPreemptionFence", pre.rstrip(".")),
        "is_priority_fence": r.flag(raw, "isPriorityFence", pre.rstrip(".")),
        "priority_offset": int(engine_props.get("priority.offset", "0") or 0)
        if "isPriorityFence" in raw
        else None,
        "preemption_delay": engine_props.get("preemption.delay"),
        "quota_preemption_delay": qdelay,
        "running_apps": r.integer(raw.get("runningApps", 0), f"{pre}runningApps", 0),
        "max_running_apps": r.integer(raw.get("maxRunningApps", 0), f"{pre}maxRunningApps", 0)
        or None,
        "engine_properties": engine_props,
    }


# ------------------------------------------------------------------ shim cache


@dataclass
class _PodInfo:
    allow_preemption: bool | None
    allow_preempt_other: bool | None


def _shim_pods(src: _Sources) -> tuple[dict[str, _PodInfo], dict[str, _PodInfo]]:
    """Pod opt-outs from the state dump: by uid and by ``namespace/name``."""
    by_uid: dict[str, _PodInfo] = {}
    by_name: dict[str, _PodInfo] = {}
    if src.diagnostics is None:
        return by_uid, by_name
    file, diag = src.diagnostics
    r = _Reader(file)
    cache = diag.get("cache")
    if not isinstance(cache, dict):
        src.warnings.append(f"{file}: rmDiagnostics has no shim cache; allow-preemption unknown")
        return by_uid, by_name
    classes: dict[str, tuple[bool | None, bool | None]] = {}
    pcs = r.obj(cache.get("priorityClasses") or {}, "rmDiagnostics.cache.priorityClasses")
    for cname, pc in pcs.items():
        path = f"rmDiagnostics.cache.priorityClasses.{cname}"
        pc = r.obj(pc, path)
        allow = _annotation_bool(r, pc, path, src.warnings)
        policy = pc.get("preemptionPolicy")
        classes[cname] = (allow, None if policy is None else policy != "Never")
    pods = r.obj(cache.get("pods") or {}, "rmDiagnostics.cache.pods")
    for key, pod in pods.items():
        path = f"rmDiagnostics.cache.pods.{key}"
        pod = r.obj(pod, path)
        allow = _annotation_bool(r, pod, path, src.warnings)
        pc_name = pod.get("priorityClassName")
        pc_allow, pc_other = (
            classes.get(pc_name, (None, None)) if isinstance(pc_name, str) else (None, None)
        )
        policy = pod.get("preemptionPolicy")
        other = (policy != "Never") if isinstance(policy, str) else pc_other
        info = _PodInfo(allow if allow is not None else pc_allow, other)
        by_name[key] = info
        uid = pod.get("uid")
        if isinstance(uid, str) and uid:
            by_uid[uid] = info
    return by_uid, by_name


def _annotation_bool(
    r: _Reader, obj: Mapping[str, Any], path: str, warnings: list[str]
) -> bool | None:
    notes = obj.get("annotations")
    if not isinstance(notes, dict):
        return None
    value = notes.get(ANNOTATION_ALLOW_PREEMPTION)
    if value is None:
        return None
    if not isinstance(value, str):
        raise r.fail(f"{path}.annotations", f"{ANNOTATION_ALLOW_PREEMPTION} must be a string")
    if value.strip() in _TRUE_WORDS:
        return True
    if value.strip() in _FALSE_WORDS:
        return False
    warnings.append(
        f"{r.file}: {path}: {ANNOTATION_ALLOW_PREEMPTION}={value!r} is not a boolean; ignored"
    )
    return None


# ------------------------------------------------------------------ nodes, allocations, apps


def _pod_key(tags: Mapping[str, str]) -> str | None:
    ns, pod = tags.get(TAG_NAMESPACE), tags.get(TAG_POD)
    return f"{ns}/{pod}" if ns and pod else None


def _tags(r: _Reader, v: object, path: str) -> dict[str, str]:
    d = r.obj(v or {}, path)
    return {k: r.string(t, f"{path}.{k}") for k, t in d.items()}


def _applications(
    src: _Sources, partition: str
) -> tuple[dict[str, dict[str, Any]], list[tuple[_Reader, str, dict[str, Any]]]]:
    """Applications by id (merged over files) and their raw objects with locations."""
    apps: dict[str, dict[str, Any]] = {}
    raws: list[tuple[_Reader, str, dict[str, Any]]] = []
    for file, base, items in src.apps:
        r = _Reader(file)
        for i, raw in enumerate(items):
            jp = f"{base}[{i}]"
            raw = r.obj(raw, jp)
            app_id = r.key(raw.get("applicationID"), f"{jp}.applicationID")
            app_part = r.string(raw.get("partition"), f"{jp}.partition", required=False)
            if app_part and app_part != partition:
                continue
            queue = r.key(raw.get("queueName"), f"{jp}.queueName")
            start = raw.get("startTime")
            start_s: float | None = None
            if start is not None:
                ms = r.integer(start, f"{jp}.startTime")
                start_s = None if ms == GO_ZERO_TIME_MS or ms <= 0 else ms / 1000.0
            info = {
                "id": app_id,
                "queue": queue,
                "partition": app_part or partition,
                "state": r.string(
                    raw.get("applicationState"), f"{jp}.applicationState", required=False
                ),
                "user": r.string(raw.get("user"), f"{jp}.user", required=False),
                "groups": [
                    r.string(g, f"{jp}.groups[{k}]")
                    for k, g in enumerate(r.arr(raw.get("groups") or [], f"{jp}.groups"))
                ],
                "submission_time": r.time_ns(raw.get("submissionTime"), f"{jp}.submissionTime"),
                "start_time": start_s,
                "finished_time": r.time_ns(raw.get("finishedTime"), f"{jp}.finishedTime"),
                "used": _drop_zeros(r.resource(raw.get("usedResource"), f"{jp}.usedResource")),
                "pending": _drop_zeros(
                    r.resource(raw.get("pendingResource"), f"{jp}.pendingResource")
                ),
                "max_used": _drop_zeros(
                    r.resource(raw.get("maxUsedResource"), f"{jp}.maxUsedResource")
                ),
                "allocations": len(r.arr(raw.get("allocations") or [], f"{jp}.allocations")),
                "requests": len(r.arr(raw.get("requests") or [], f"{jp}.requests")),
            }
            prev = apps.get(app_id)
            if prev is not None and prev["queue"] != queue:
                raise r.fail(
                    f"{jp}.queueName", f"application {app_id} is in {prev['queue']} in another file"
                )
            if prev is None or (
                info["state"] not in ("Completed", "Failed", "Rejected", "Expired")
            ):
                apps[app_id] = info
            raws.append((r, jp, raw))
    return apps, raws


def _assemble(src: _Sources, partition: str) -> SnapshotImport:
    tree, usage, leaves = _queue_tree(src)
    warnings = src.warnings
    by_uid, by_name = _shim_pods(src)
    apps, app_raws = _applications(src, partition)

    def queue_of(r: _Reader, jp: str, app_id: str, tags: Mapping[str, str], what: str) -> str:
        app = apps.get(app_id)
        queue = app["queue"] if app is not None else None
        if queue is None:
            label = tags.get(TAG_QUEUE)
            if label:
                queue = label.lower()
                warnings.append(
                    f"{r.file}: {jp}: {what} of application {app_id!r}: queue taken from the pod "
                    f"label ({queue}); no application data for it"
                )
        if queue is None:
            raise r.fail(
                f"{jp}.applicationId",
                f"{what} of application {app_id!r}: its queue is unknown (no application data "
                "and no queue label); add partition_applications_active.json",
            )
        if queue not in leaves:
            raise r.fail(f"{jp}.applicationId", f"{what} in unknown queue {queue!r}")
        if not leaves[queue]:
            raise r.fail(
                f"{jp}.applicationId", f"{what} in parent queue {queue!r}; tasks run in leaves"
            )
        return queue

    nodes: list[dict[str, Any]] = []
    allocations: list[dict[str, Any]] = []
    node_alloc_sum: dict[str, dict[str, int]] = {}
    node_reported: dict[str, dict[str, int]] = {}
    seen_keys: dict[str, str] = {}
    opted_out = 0
    if src.nodes is not None:
        file, base, items = src.nodes
        r = _Reader(file)
        seen_nodes: set[str] = set()
        for i, raw in enumerate(items):
            jp = f"{base}[{i}]"
            raw = r.obj(raw, jp)
            nid = r.key(raw.get("nodeID"), f"{jp}.nodeID")
            if nid in seen_nodes:
                raise r.fail(f"{jp}.nodeID", f"duplicate node {nid!r}")
            seen_nodes.add(nid)
            capacity = r.resource(raw.get("capacity"), f"{jp}.capacity")
            occupied = r.resource(raw.get("occupied"), f"{jp}.occupied")
            if not occupied and raw.get("foreignAllocations"):
                for k, fa in enumerate(
                    r.arr(raw["foreignAllocations"], f"{jp}.foreignAllocations")
                ):
                    fa = r.obj(fa, f"{jp}.foreignAllocations[{k}]")
                    _add_into(
                        occupied,
                        r.resource(fa.get("resource"), f"{jp}.foreignAllocations[{k}].resource"),
                    )
            node: dict[str, Any] = {
                "id": nid,
                "capacity": {t: max(q - occupied.get(t, 0), 0) for t, q in capacity.items()},
                "schedulable": r.flag(raw, "schedulable", jp, default=True),
            }
            if _drop_zeros(occupied):
                # foreign pods (other schedulers) hold this; the engine sees only YuniKorn tasks
                node["reported_capacity"] = capacity
                node["occupied"] = _drop_zeros(occupied)
            nodes.append(node)
            node_reported[nid] = _drop_zeros(r.resource(raw.get("allocated"), f"{jp}.allocated"))
            node_alloc_sum[nid] = {}
            for k, a in enumerate(r.arr(raw.get("allocations") or [], f"{jp}.allocations")):
                ajp = f"{jp}.allocations[{k}]"
                a = r.obj(a, ajp)
                key = r.key(a.get("allocationKey"), f"{ajp}.allocationKey")
                if key in seen_keys:
                    raise r.fail(
                        f"{ajp}.allocationKey",
                        f"duplicate allocation {key!r} (also on {seen_keys[key]})",
                    )
                seen_keys[key] = nid
                on = r.string(a.get("nodeId"), f"{ajp}.nodeId", required=False) or nid
                if on != nid:
                    raise r.fail(
                        f"{ajp}.nodeId", f"allocation listed under node {nid!r} says node {on!r}"
                    )
                app_id = r.string(a.get("applicationId"), f"{ajp}.applicationId", required=False)
                tags = _tags(r, a.get("allocationTags"), f"{ajp}.allocationTags")
                resources = r.resource(a.get("resource"), f"{ajp}.resource")
                _add_into(node_alloc_sum[nid], resources)
                pod = _pod_key(tags)
                shim = by_uid.get(key) or (by_name.get(pod) if pod else None)
                allow = True
                if shim is not None and shim.allow_preemption is not None:
                    allow = shim.allow_preemption
                if not allow:
                    opted_out += 1
                created = a.get("requestTime", a.get("allocationTime"))
                alloc: dict[str, Any] = {
                    "key": key,
                    "app": app_id,
                    "queue": queue_of(r, ajp, app_id, tags, "allocation"),
                    "node": nid,
                    "resources": _drop_zeros(resources),
                    "priority": r.priority(a.get("priority"), f"{ajp}.priority"),
                    "originator": r.flag(a, "originator", ajp),
                    "allow_preemption": allow,
                    "created": r.time_ns(created, f"{ajp}.requestTime") or 0.0,
                    "required_node": bool(tags.get(TAG_REQUIRED_NODE)),
                    "preempted": r.flag(a, "preempted", ajp),
                }
                if pod:
                    alloc["pod"] = pod
                if r.flag(a, "placeholder", ajp):
                    alloc["placeholder"] = True
                allocations.append(alloc)
    node_ids = {n["id"] for n in nodes}

    # pending asks, and allocations the applications list but the nodes do not
    asks: list[dict[str, Any]] = []
    ask_keys: set[str] = set()
    app_alloc_sum: dict[str, dict[str, int]] = {}
    app_alloc_keys: set[str] = set()
    missing_nodes: list[str] = []
    for r, jp, raw in app_raws:
        app_id = raw["applicationID"]
        for k, a in enumerate(r.arr(raw.get("allocations") or [], f"{jp}.allocations")):
            ajp = f"{jp}.allocations[{k}]"
            a = r.obj(a, ajp)
            key = r.key(a.get("allocationKey"), f"{ajp}.allocationKey")
            on = r.string(a.get("nodeId"), f"{ajp}.nodeId", required=False)
            res = r.resource(a.get("resource"), f"{ajp}.resource")
            if key in app_alloc_keys:
                continue  # the same application listed by two endpoints
            app_alloc_keys.add(key)
            if src.nodes is None:
                missing_nodes.append(key)
                continue
            if key not in seen_keys:
                if on and on not in node_ids:
                    raise r.fail(f"{ajp}.nodeId", f"allocation {key!r} on unknown node {on!r}")
                warnings.append(
                    f"{r.file}: {ajp}: allocation {key!r} of {app_id} is not on any node in the "
                    "nodes list (the files were not taken at the same moment?)"
                )
            _add_into(app_alloc_sum.setdefault(app_id, {}), res)
        app_state = raw.get("applicationState")
        for k, q in enumerate(r.arr(raw.get("requests") or [], f"{jp}.requests")):
            qjp = f"{jp}.requests[{k}]"
            q = r.obj(q, qjp)
            key = r.key(q.get("allocationKey"), f"{qjp}.allocationKey")
            if key in ask_keys:
                continue  # the same application listed by two endpoints
            ask_keys.add(key)
            if key in seen_keys:
                warnings.append(f"{r.file}: {qjp}: ask {key!r} is also a running allocation")
                continue
            tags = _tags(r, q.get("allocationTags"), f"{qjp}.allocationTags")
            pod = _pod_key(tags)
            shim = by_uid.get(key) or (by_name.get(pod) if pod else None)
            ask: dict[str, Any] = {
                "key": key,
                "app": app_id,
                "queue": queue_of(r, qjp, app_id, tags, "ask"),
                "resources": _drop_zeros(r.resource(q.get("resource"), f"{qjp}.resource")),
                "priority": r.priority(q.get("priority"), f"{qjp}.priority"),
                "allow_preempt_other": True
                if shim is None or shim.allow_preempt_other is None
                else shim.allow_preempt_other,
                "created": r.time_ns(q.get("requestTime"), f"{qjp}.requestTime") or 0.0,
                "triggered_preemption": r.flag(q, "triggeredPreemption", qjp),
                "required_node": r.string(
                    q.get("requiredNodeId"), f"{qjp}.requiredNodeId", required=False
                )
                or tags.get(TAG_REQUIRED_NODE)
                or None,
                "placeholder": r.flag(q, "placeholder", qjp),
                "application_state": app_state,
            }
            if pod:
                ask["pod"] = pod
            asks.append(ask)
    if missing_nodes:
        warnings.append(
            f"no nodes list (partition_nodes.json): the {len(missing_nodes)} allocations of the "
            "applications cannot be placed, so the snapshot holds no allocations and no usage"
        )

    # cross-checks against the scheduler's own sums
    if src.nodes is not None:
        _cross_check(src, usage, allocations, node_reported, node_alloc_sum, apps, app_alloc_sum)

    flag = _partition_flag(src, partition)
    scenario: dict[str, Any] = {}
    if src.captured_at is not None:
        scenario["now"] = src.captured_at
    scenario["partition"] = {"quota_preemption_enabled": flag, "miss": 0.0}
    scenario["queues"] = tree
    scenario["nodes"] = nodes
    scenario["allocations"] = allocations
    _validate(scenario, src)
    if opted_out:
        warnings.append(
            f"{opted_out} allocations opted out of preemption (yunikorn.apache.org/allow-preemption"
            " on the pod or its PriorityClass)"
        )
    return SnapshotImport(
        kind=src.kind,
        partition=partition,
        captured_at=src.captured_at,
        scenario=scenario,
        asks=tuple(sorted(asks, key=lambda a: a["key"])),
        applications=tuple(apps[k] for k in sorted(apps)),
        queue_usage=usage,
        warnings=tuple(warnings),
        files=tuple(src.files),
        cluster_id=src.cluster_id or _cluster_id(src),
        events=src.events,
    )


def _cluster_id(src: _Sources) -> str | None:
    if src.partitions is None:
        return None
    for p in src.partitions[2]:
        if isinstance(p, dict) and isinstance(p.get("clusterId"), str):
            return str(p["clusterId"])
    return None


def _partition_flag(src: _Sources, partition: str) -> bool:
    found: list[tuple[str, bool]] = []
    if src.partitions is not None:
        file, base, items = src.partitions
        r = _Reader(file)
        for i, p in enumerate(items):
            p = r.obj(p, f"{base}[{i}]")
            if (p.get("name") or "default") == partition:
                found.append((file, r.flag(p, "quotaPreemptionEnabled", f"{base}[{i}]")))
    if src.config is not None:
        file, base, conf = src.config
        r = _Reader(file)
        pre = f"{base}." if base else ""
        for i, p in enumerate(r.arr(conf.get("Partitions") or [], f"{pre}Partitions")):
            p = r.obj(p, f"{pre}Partitions[{i}]")
            name = p.get("Name") or "default"
            if isinstance(name, str) and (name.lower() == partition.lower()):
                pre_obj = r.obj(p.get("Preemption") or {}, f"{pre}Partitions[{i}].Preemption")
                found.append(
                    (
                        file,
                        r.flag(
                            pre_obj, "QuotaPreemptionEnabled", f"{pre}Partitions[{i}].Preemption"
                        ),
                    )
                )
    if not found:
        src.warnings.append(
            "no partitions.json or config.json: the partition's quotapreemptionenabled flag is "
            "unknown and imported as false (quota preemption disabled)"
        )
        return False
    values = {v for _, v in found}
    if len(values) > 1:
        src.warnings.append(
            "the quota preemption flag disagrees between "
            + ", ".join(f"{f} ({v})" for f, v in found)
            + f"; using {found[0][1]} from {found[0][0]}"
        )
    return found[0][1]


def _cross_check(
    src: _Sources,
    usage: dict[str, dict[str, Any]],
    allocations: list[dict[str, Any]],
    node_reported: dict[str, dict[str, int]],
    node_sums: dict[str, dict[str, int]],
    apps: dict[str, dict[str, Any]],
    app_sums: dict[str, dict[str, int]],
) -> None:
    """Warn where the scheduler's sums disagree with the allocations we hold."""
    assert src.tree is not None
    tree_file = src.tree[0]
    allocated: dict[str, dict[str, int]] = {p: {} for p in usage}
    preempting: dict[str, dict[str, int]] = {p: {} for p in usage}
    for a in allocations:
        parts = a["queue"].split(".")
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            _add_into(allocated[path], a["resources"])
            if a["preempted"]:
                _add_into(preempting[path], a["resources"])
    for path in sorted(usage):
        u = usage[path]
        mine_a, mine_p = _drop_zeros(allocated[path]), _drop_zeros(preempting[path])
        if mine_a != u["allocated"]:
            src.warnings.append(
                f"{tree_file}: {path} allocatedResource {format_resource(u['allocated'])} but its "
                f"allocations (preempted ones included) sum to {format_resource(mine_a)}"
            )
        if mine_p != u["preempting"]:
            src.warnings.append(
                f"{tree_file}: {path} preemptingResource {format_resource(u['preempting'])} but "
                f"its preempted allocations sum to {format_resource(mine_p)}"
            )
    assert src.nodes is not None
    for nid, reported in node_reported.items():
        mine = _drop_zeros(node_sums.get(nid, {}))
        if reported != mine:
            src.warnings.append(
                f"{src.nodes[0]}: node {nid} allocated {format_resource(reported)} but its "
                f"allocations sum to {format_resource(mine)}"
            )
    for app_id, sums in app_sums.items():
        app = apps.get(app_id)
        if app is not None and app["used"] != _drop_zeros(sums):
            src.warnings.append(
                f"application {app_id}: usedResource {format_resource(app['used'])} but its "
                f"allocations sum to {format_resource(_drop_zeros(sums))}"
            )


def _validate(scenario: dict[str, Any], src: _Sources) -> None:
    """The engine's own validation: every snapshot must be a scenario ``python -m engine`` reads."""
    doc = dict(scenario)
    doc["request"] = {"type": "resources", "queue": "root"}
    try:
        parse_scenario(doc, default_now=0.0)
    except ScenarioError as exc:
        files = ", ".join(src.files) or "snapshot"
        raise ImportFailure(
            f"the imported cluster is not a valid scenario: {exc.message}",
            f"{files}: {exc.field}",
        ) from None
