"""The scheduler's own events: ``GET /ws/v1/events/batch`` -> typed records of what it did.

The answer is ``dao.EventRecordDAO`` (``pkg/webservice/dao/event_record.go``):
``InstanceUUID``, ``LowestID``, ``HighestID`` and ``EventRecords``, a list of
scheduler-interface ``si.EventRecord`` objects as protobuf's Go structs marshal
them (``si.proto``):

- records carry no id: record *i* of a batch asked for with ``?start=N`` is
  event ``N + i`` (the ring buffer, ``pkg/events/event_ringbuffer.go``, answers
  from the id asked for, or nothing with ``LowestID`` when that id is gone);
- enums are numbers and zero values are omitted (``type``, ``eventChangeType``,
  ``eventChangeDetail``, ``message``, ``referenceID``): REQUEST events have no
  change type or detail;
- ``resource`` is protobuf-shaped, ``{"resources": {"vcore": {"value": 2000}}}``;
  a zero quantity is ``{}`` and a nil resource is ``{}``;
- the quota preemption summary (``quota_preemptor.go``) prints Go maps
  (``map[memory:8589934592 pods:2 vcore:2000]``, ``nil resource`` when unset).

:func:`parse_events` keeps every record (unknown enums and messages included,
as numbers and text) and derives what the scheduler did:

- :class:`QueueMaxChange` - QUEUE (4) / QUEUE_MAX (403): a queue's max changed
  (a config reload); the new max when the event carries it;
- :class:`ObservedQuotaPreemption` - QUEUE_PREEMPTION (407) summaries with the
  figures of their message, and their victims from the REQUEST events
  "Preempted by Quota change enforcement process in <queue>";
- :class:`ObservedPreemption` - inter-queue preemption: the REQUEST events
  "Preempted by <ask> from application <app> in <queue>" grouped by ask;
- :class:`Release` - APP (2) / ALLOC_PREEMPT (501): a preempted allocation was
  released (its victim event may be in an earlier batch).

Malformed input raises :class:`ImportFailure` naming the record index and field.
Nothing here imports Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1

TYPES = {0: "UNKNOWN", 1: "REQUEST", 2: "APP", 3: "NODE", 4: "QUEUE", 5: "USERGROUP"}
CHANGES = {0: "NONE", 1: "SET", 2: "ADD", 3: "REMOVE"}
DETAILS = {
    0: "DETAILS_NONE",
    100: "REQUEST_CANCEL",
    101: "REQUEST_ALLOC",
    102: "REQUEST_TIMEOUT",
    200: "APP_ALLOC",
    201: "APP_REQUEST",
    202: "APP_REJECT",
    203: "APP_NEW",
    204: "APP_ACCEPTED",
    205: "APP_STARTING",
    206: "APP_RUNNING",
    207: "APP_COMPLETING",
    208: "APP_COMPLETED",
    209: "APP_FAILING",
    210: "APP_FAILED",
    211: "APP_RESUMING",
    212: "APP_EXPIRED",
    213: "APP_CANNOTRUN_QUEUE",
    214: "APP_RUNNABLE_QUEUE",
    215: "APP_CANNOTRUN_QUOTA",
    216: "APP_RUNNABLE_QUOTA",
    300: "NODE_DECOMISSION",
    301: "NODE_READY",
    302: "NODE_SCHEDULABLE",
    303: "NODE_ALLOC",
    304: "NODE_CAPACITY",
    305: "NODE_OCCUPIED",
    306: "NODE_RESERVATION",
    400: "QUEUE_CONFIG",
    401: "QUEUE_DYNAMIC",
    402: "QUEUE_TYPE",
    403: "QUEUE_MAX",
    404: "QUEUE_GUARANTEED",
    405: "QUEUE_APP",
    406: "QUEUE_ALLOC",
    407: "QUEUE_PREEMPTION",
    500: "ALLOC_CANCEL",
    501: "ALLOC_PREEMPT",
    502: "ALLOC_TIMEOUT",
    503: "ALLOC_REPLACED",
    504: "ALLOC_NODEREMOVED",
    600: "UG_USER_LIMIT",
    601: "UG_GROUP_LIMIT",
    602: "UG_APP_LINK",
    603: "UG_USER_RESOURCE",
    604: "UG_GROUP_RESOURCE",
}
#: The scheduler cuts a longer message to this many bytes, the last three "..."
#: (``truncateEventMessage``, ``pkg/events/event_system.go``: Kubernetes' event limit).
MESSAGE_LIMIT = 1024
TYPE_REQUEST, TYPE_APP, TYPE_NODE, TYPE_QUEUE = 1, 2, 3, 4
CHANGE_REMOVE = 3
QUEUE_MAX, QUEUE_PREEMPTION, NODE_ALLOC, ALLOC_PREEMPT = 403, 407, 303, 501

_QUOTA_VICTIM = re.compile(r"Preempted by Quota change enforcement process in (?P<queue>\S+)")
_ASK_VICTIM = re.compile(
    r"Preempted by (?P<ask>\S+) from application (?P<app>\S+) in (?P<queue>\S+)"
)
_SUMMARY = re.compile(
    r"Quota Preemption results summary: preemptable resources: (?P<preemptable>.*?), "
    r"claimed resources: (?P<claimed>.*?), selected victims: (?P<selected>\d+), "
    r"preempted victims: (?P<preempted>\d+)"
)
_GO_MAP = re.compile(r"map\[(?P<body>[^\]]*)\]")


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class EventRecord:
    """One ``si.EventRecord`` with its id; enums as numbers (names where known)."""

    id: int
    type: int
    object_id: str
    time_ns: int
    change_type: int
    change_detail: int
    reference_id: str
    message: str
    resource: dict[str, int]

    @property
    def time(self) -> float:
        """Seconds since the epoch."""
        return self.time_ns / 1e9

    @property
    def type_name(self) -> str | None:
        return TYPES.get(self.type)

    @property
    def is_cut(self) -> bool:
        """Whether the scheduler cut the message at :data:`MESSAGE_LIMIT` bytes.

        Go cuts bytes, not characters: a character split there reaches the JSON as one
        U+FFFD per byte left, each three bytes long once decoded and encoded again.

        >>> rec = EventRecord(0, 0, "", 0, 0, 0, "", "x" * 1021 + "...", {})
        >>> rec.is_cut, EventRecord(0, 0, "", 0, 0, 0, "", "x...", {}).is_cut
        (True, False)
        """
        if not self.message.endswith("..."):
            return False
        body = self.message[:-3]
        for split in range(4):  # up to three bytes of a split character
            if split and body[-split:] != "\ufffd" * split:
                break
            kept = body[: len(body) - split] if split else body
            if len(kept.encode("utf-8", "surrogatepass")) + split == MESSAGE_LIMIT - 3:
                return True
        return False

    @property
    def detail_name(self) -> str | None:
        return DETAILS.get(self.change_detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "type_name": self.type_name,
            "change_name": CHANGES.get(self.change_type),
            "detail_name": self.detail_name,
        }


@dataclass(frozen=True)
class QueueMaxChange:
    """QUEUE_MAX: *queue*'s max changed at *time* (``new_max`` None when the event has none)."""

    event_id: int
    queue: str
    time: float
    new_max: dict[str, int] | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Victim:
    """An allocation the scheduler chose as a victim, with what is known of it.

    ``queue`` and ``node`` come from the allocations passed to :func:`parse_events`
    or from other events of the batch (a quota victim's message names its leaf
    queue; a NODE_ALLOC removal names the node); ``None`` when not derivable.
    """

    allocation_key: str
    app: str
    queue: str | None
    node: str | None
    resources: dict[str, int]
    event_id: int
    time: float
    released_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ObservedQuotaPreemption:
    """A quota preemption the scheduler ran (its QUEUE_PREEMPTION summary) and its victims."""

    queue: str
    time: float
    summary_event_id: int
    max: dict[str, int] | None
    preemptable: dict[str, int] | None
    claimed: dict[str, int] | None
    selected_victims: int | None
    preempted_victims: int | None
    victims: tuple[Victim, ...]
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["victims"] = [v.to_dict() for v in self.victims]
        return out


@dataclass(frozen=True)
class ObservedPreemption:
    """An inter-queue preemption: the ask that triggered it and the victims taken for it."""

    ask: str
    app: str
    queue: str
    time: float
    victims: tuple[Victim, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["victims"] = [v.to_dict() for v in self.victims]
        return out


@dataclass(frozen=True)
class Release:
    """ALLOC_PREEMPT: a preempted allocation left the scheduler."""

    event_id: int
    allocation_key: str
    app: str
    time: float
    resources: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EventsImport:
    """One parsed batch; ``next_start`` is the id to ask for next (incremental polling)."""

    instance_uuid: str
    lowest_id: int
    highest_id: int
    start: int
    records: tuple[EventRecord, ...]
    queue_max_changes: tuple[QueueMaxChange, ...]
    quota_preemptions: tuple[ObservedQuotaPreemption, ...]
    preemptions: tuple[ObservedPreemption, ...]
    releases: tuple[Release, ...]
    warnings: tuple[str, ...] = field(default=())
    waiting: tuple[Victim, ...] = field(default=())
    """Quota victims whose summary event is not in the batch yet (it ends between them):
    pass them as ``carry`` to the parse of the next batch."""

    @property
    def last_event_id(self) -> int | None:
        """The id of the last record of this batch (None for an empty batch)."""
        return self.records[-1].id if self.records else None

    @property
    def next_start(self) -> int:
        """Where the next poll starts: after the last record, or at ``LowestID`` when the
        id asked for was no longer in the scheduler's ring buffer."""
        if self.records:
            return self.records[-1].id + 1
        if self.start < self.lowest_id:
            return self.lowest_id
        return self.start

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_uuid": self.instance_uuid,
            "lowest_id": self.lowest_id,
            "highest_id": self.highest_id,
            "start": self.start,
            "last_event_id": self.last_event_id,
            "next_start": self.next_start,
            "queue_max_changes": [c.to_dict() for c in self.queue_max_changes],
            "quota_preemptions": [q.to_dict() for q in self.quota_preemptions],
            "preemptions": [p.to_dict() for p in self.preemptions],
            "releases": [r.to_dict() for r in self.releases],
            "waiting": [v.to_dict() for v in self.waiting],
            "warnings": list(self.warnings),
        }


# ------------------------------------------------------------------ reading


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> ImportFailure:
        return ImportFailure(message, f"{self.file}: {path}" if path else self.file)

    def integer(self, v: object, path: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"expected an integer, got {type(v).__name__}")
        if not lo <= v <= hi:
            raise self.fail(path, f"{v} is out of range ({lo}..{hi})")
        return v

    def string(self, v: object, path: str) -> str:
        if not isinstance(v, str):
            raise self.fail(path, f"expected a string, got {type(v).__name__}")
        return v

    def resource(self, v: object, path: str) -> dict[str, int]:
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a protobuf resource object, got {type(v).__name__}")
        inner = v.get("resources")
        if inner is None:
            return {}
        if not isinstance(inner, dict):
            raise self.fail(f"{path}.resources", "expected an object of quantities")
        out: dict[str, int] = {}
        for t, q in inner.items():
            if not isinstance(q, dict):
                raise self.fail(f"{path}.resources.{t}", 'expected {"value": N}')
            out[t] = self.integer(q.get("value", 0), f"{path}.resources.{t}.value")
        return out


def go_map(text: str) -> dict[str, int] | None:
    """A Go ``%v`` of ``map[string]Quantity`` -> a resource; None for ``nil resource``.

    >>> go_map("map[memory:8589934592 pods:2 vcore:2000]")
    {'memory': 8589934592, 'pods': 2, 'vcore': 2000}
    >>> go_map("map[]"), go_map("nil resource")
    ({}, None)
    """
    m = _GO_MAP.fullmatch(text.strip())
    if m is None:
        return None
    out: dict[str, int] = {}
    for entry in m.group("body").split():
        name, sep, value = entry.rpartition(":")
        if not sep or not name:
            return None
        try:
            out[name] = int(value)
        except ValueError:
            return None
    return out


def _record(r: _Reader, raw: object, index: int, event_id: int) -> EventRecord:
    path = f"EventRecords[{index}]"
    if not isinstance(raw, dict):
        raise r.fail(path, f"expected an event record object, got {type(raw).__name__}")
    return EventRecord(
        id=event_id,
        type=r.integer(raw.get("type", 0), f"{path}.type", 0, 2**31 - 1),
        object_id=r.string(raw.get("objectID", ""), f"{path}.objectID"),
        time_ns=r.integer(raw.get("timestampNano", 0), f"{path}.timestampNano"),
        change_type=r.integer(raw.get("eventChangeType", 0), f"{path}.eventChangeType", 0),
        change_detail=r.integer(raw.get("eventChangeDetail", 0), f"{path}.eventChangeDetail", 0),
        reference_id=r.string(raw.get("referenceID", ""), f"{path}.referenceID"),
        message=r.string(raw.get("message", ""), f"{path}.message"),
        resource=r.resource(raw.get("resource", {}), f"{path}.resource"),
    )


def parse_events(
    data: bytes | Mapping[str, Any],
    *,
    start: int | None = None,
    filename: str = "events_batch.json",
    allocations: Mapping[str, Mapping[str, Any]] | None = None,
    carry: Sequence[Victim] = (),
) -> EventsImport:
    """Parse one ``/ws/v1/events/batch`` answer.

    Args:
        data: the answer's bytes, or the decoded JSON object.
        start: the ``start`` the batch was asked for (record *i* is event
            ``start + i``); without it the batch is taken to end at ``HighestID``.
        filename: named in errors.
        allocations: allocation key -> ``{"queue": ..., "node": ...}`` (for example
            a snapshot's allocations), to name the queue and node of victims.
        carry: the previous batch's ``waiting`` quota victims (incremental polling).

    Raises:
        ImportFailure: naming the record index and field of malformed input.
    """
    doc = load_json(filename, data) if isinstance(data, bytes) else data
    r = _Reader(filename)
    if not isinstance(doc, Mapping) or "EventRecords" not in doc:
        raise r.fail("", "not an events batch (GET /ws/v1/events/batch): no EventRecords")
    raw_records = doc.get("EventRecords")
    if raw_records is None:
        raw_records = []
    if not isinstance(raw_records, list):
        raise r.fail("EventRecords", f"expected a list, got {type(raw_records).__name__}")
    lowest = r.integer(doc.get("LowestID", 0), "LowestID", 0, UINT64_MAX)
    highest = r.integer(doc.get("HighestID", 0), "HighestID", 0, UINT64_MAX)
    uuid = r.string(doc.get("InstanceUUID", ""), "InstanceUUID")
    warnings: list[str] = []
    if start is None:
        start = max(highest - len(raw_records) + 1, 0)
    else:
        start = r.integer(start, "start", 0, UINT64_MAX)
    if raw_records and start < lowest:
        warnings.append(
            f"{filename}: the batch starts at event {start}, below LowestID {lowest}; "
            "the ids of its records may be wrong"
        )
    if not raw_records and start < lowest:
        warnings.append(
            f"{filename}: events {start} to {lowest - 1} are no longer in the scheduler's "
            f"event buffer (LowestID {lowest}); what happened then is lost"
        )
    records = tuple(_record(r, raw, i, start + i) for i, raw in enumerate(raw_records))
    return _derive(uuid, lowest, highest, start, records, allocations or {}, warnings, carry)


def _cut_warning(e: EventRecord, what: str) -> str:
    return (
        f"event {e.id}: message cut by the scheduler at {MESSAGE_LIMIT} bytes: {what} "
        "named at its end may be cut too"
    )


def _derive(
    uuid: str,
    lowest: int,
    highest: int,
    start: int,
    records: tuple[EventRecord, ...],
    allocations: Mapping[str, Mapping[str, Any]],
    warnings: list[str],
    carry: Sequence[Victim],
) -> EventsImport:
    nodes: dict[str, str] = {}
    released: dict[str, float] = {}
    for e in records:
        if e.type == TYPE_NODE and e.change_detail == NODE_ALLOC and e.change_type == CHANGE_REMOVE:
            nodes[e.reference_id] = e.object_id
        if e.type == TYPE_APP and e.change_detail == ALLOC_PREEMPT:
            released.setdefault(e.reference_id, e.time)

    def victim(e: EventRecord, queue: str | None) -> Victim:
        known = allocations.get(e.object_id) or {}
        node = known.get("node") or nodes.get(e.object_id)
        return Victim(
            allocation_key=e.object_id,
            app=e.reference_id or str(known.get("app") or ""),
            queue=str(known.get("queue") or queue or "") or None,
            node=str(node) if node else None,
            resources=dict(e.resource),
            event_id=e.id,
            time=e.time,
            released_at=released.get(e.object_id),
        )

    max_changes: list[QueueMaxChange] = []
    quota: list[ObservedQuotaPreemption] = []
    waiting: list[Victim] = list(carry)  # quota victims not yet matched to a summary
    asks: dict[str, tuple[str, str, float, list[Victim]]] = {}
    releases: list[Release] = []
    for e in records:
        if e.type == TYPE_QUEUE and e.change_detail == QUEUE_MAX:
            max_changes.append(QueueMaxChange(e.id, e.object_id, e.time, e.resource or None))
        elif e.type == TYPE_QUEUE and e.change_detail == QUEUE_PREEMPTION:
            mine = [
                v
                for v in waiting
                if v.queue is not None
                and (v.queue == e.object_id or v.queue.startswith(e.object_id + "."))
            ]
            waiting = [v for v in waiting if v not in mine]
            m = _SUMMARY.search(e.message)
            if m is None:
                warnings.append(
                    f"event {e.id}: quota preemption summary of {e.object_id} "
                    + (
                        f"cut by the scheduler at {MESSAGE_LIMIT} bytes: its figures are not read"
                        if e.is_cut
                        else f"not understood: {e.message!r}"
                    )
                )
            quota.append(
                ObservedQuotaPreemption(
                    queue=e.object_id,
                    time=e.time,
                    summary_event_id=e.id,
                    max=e.resource or None,
                    preemptable=go_map(m.group("preemptable")) if m else None,
                    claimed=go_map(m.group("claimed")) if m else None,
                    selected_victims=int(m.group("selected")) if m else None,
                    preempted_victims=int(m.group("preempted")) if m else None,
                    victims=tuple(mine),
                    message=e.message,
                )
            )
        elif e.type == TYPE_REQUEST and (q := _QUOTA_VICTIM.fullmatch(e.message)):
            if e.is_cut:  # the queue at the message's end is cut: not to be trusted
                warnings.append(_cut_warning(e, "the victim's queue"))
            waiting.append(victim(e, None if e.is_cut else q.group("queue")))
        elif e.type == TYPE_REQUEST and (a := _ASK_VICTIM.fullmatch(e.message)):
            if e.is_cut:
                warnings.append(_cut_warning(e, "the preempting ask's queue"))
            ask = a.group("ask")
            entry = asks.setdefault(ask, (a.group("app"), a.group("queue"), e.time, []))
            entry[3].append(victim(e, None))
        elif e.type == TYPE_APP and e.change_detail == ALLOC_PREEMPT:
            releases.append(Release(e.id, e.reference_id, e.object_id, e.time, dict(e.resource)))
    preemptions = [
        ObservedPreemption(ask, app, queue, t, tuple(vs))
        for ask, (app, queue, t, vs) in sorted(asks.items(), key=lambda kv: (kv[1][2], kv[0]))
    ]
    return EventsImport(
        instance_uuid=uuid,
        lowest_id=lowest,
        highest_id=highest,
        start=start,
        records=records,
        queue_max_changes=tuple(max_changes),
        quota_preemptions=tuple(sorted(quota, key=lambda q: (q.time, q.queue))),
        preemptions=tuple(preemptions),
        releases=tuple(releases),
        warnings=tuple(warnings),
        waiting=tuple(waiting),
    )
