"""A fake YuniKorn scheduler that changes while the dashboard polls it.

It serves the shared acme-ml REST answers (queues, nodes, applications, partitions),
``/ws/v1/config`` and the events batch and stream as yunikorn-core does (a ring
buffer of records with ids; ``?start=N``; ``InstanceUUID``, ``LowestID``,
``HighestID``), from one state the test changes through the control API:

- in the test process: :class:`LiveYuniKorn` methods (``set_max``, ``add_event``,
  ``queue_max_event``, ``set_config_max``, ``fail``, ``restart``, ...);
- over HTTP, for a browser test or another process: ``POST /control/<action>`` with a
  JSON body naming the method's arguments (``{"queue": "root.batch", "vcore": 9000}``).

At the start root.batch's allocations use 10 cores under a max of 9, and the event
ring holds the fixture's records up to the QUEUE_MAX event that lowered it (15245,
09:54:30, here to 9 cores): the scheduler's timer is running, started by that event.
The scheduler reports itself healthy (``/ws/v1/scheduler/healthcheck``) and its start
an hour before its first event (``startTime`` of ``/ws/v1/clusters``); ``restart``
starts a new instance (``InstanceUUID``, event ids from 0, ``startTime``) that recovers
the same allocations.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sources_helpers import REST, FakeYuniKorn, make_handler, rest_server_state, serving

EVENTS = "/ws/v1/events/batch"
STREAM = "/ws/v1/events/stream"
CONFIG = "/ws/v1/config"
QUEUES = "/ws/v1/partition/default/queues"
HEALTHCHECK = "/ws/v1/scheduler/healthcheck"
CLUSTERS = "/ws/v1/clusters"
UUID = "8e4cef37-9d9e-50c7-83c1-37235e42adbf"
GI = 2**30
FIRST_ID = 15230


def _fixture_records() -> list[dict[str, Any]]:
    return list(json.loads((REST / "events_batch.json").read_bytes())["EventRecords"])


@dataclass
class LiveYuniKorn:
    """The fake scheduler's state; every method is one change of the cluster."""

    rest: FakeYuniKorn = field(default_factory=rest_server_state)
    records: list[dict[str, Any]] = field(default_factory=list)
    lowest: int = FIRST_ID
    uuid: str = UUID
    config: dict[str, Any] = field(default_factory=dict)
    start_ns: int = 0
    stream_lines: list[bytes] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self.records = _fixture_records()[:16]  # up to the QUEUE_MAX event 15245
        # that event lowered root.batch to 9 cores here (10 in the fixture), below the
        # 10 its allocations use: the scheduler's timer runs
        self.records[15]["resource"]["resources"]["vcore"]["value"] = 9000
        self.config = json.loads((REST / "config.json").read_text())
        self.set_config_max("root.batch", 9000)
        self.config["Checksum"] = "LIVE-START"
        self.rest.set_json(CONFIG, self.config)
        tree = self.rest.json(QUEUES)
        batch = self._queue(tree, "root.batch")
        batch["maxResource"]["vcore"] = 9000
        self.rest.set_json(QUEUES, tree)
        self.rest.set_json(HEALTHCHECK, {"Healthy": True, "HealthChecks": []})
        self._serve_start(self.records[0]["timestampNano"] - 3600 * 10**9)

    @property
    def url(self) -> str:
        return self.rest.url

    # -- what the scheduler answers -----------------------------------------------------

    def events_answer(self, start: int) -> bytes:
        with self.lock:
            highest = self.lowest + len(self.records) - 1
            found = self.lowest <= start <= highest
            return json.dumps(
                {
                    "InstanceUUID": self.uuid,
                    "LowestID": self.lowest,
                    "HighestID": highest,
                    "EventRecords": self.records[start - self.lowest :] if found else None,
                }
            ).encode()

    # -- the control API ----------------------------------------------------------------

    @staticmethod
    def _queue(tree: dict[str, Any], path: str) -> dict[str, Any]:
        stack = [tree]
        while stack:
            q = stack.pop()
            if q.get("queuename") == path:
                return q
            stack.extend(q.get("children") or [])
        raise KeyError(path)

    def set_max(self, queue: str, vcore: int) -> None:
        """The queue's max as the queues answer reports it (memory kept)."""
        with self.lock:
            tree = self.rest.json(QUEUES)
            self._queue(tree, queue)["maxResource"]["vcore"] = vcore
            self.rest.set_json(QUEUES, tree)

    def set_config_max(self, queue: str, vcore: int) -> None:
        """The queue's max in ``/ws/v1/config`` (a new checksum, as a reload gives)."""
        with self.lock:
            node: dict[str, Any] = self.config["Partitions"][0]["Queues"][0]
            for name in queue.split(".")[1:]:
                node = next(q for q in node["Queues"] if q["Name"] == name)
            node["Resources"]["Max"]["vcore"] = str(vcore // 1000)
            self.config["Checksum"] = f"LIVE-{queue}-{vcore}-{time.time_ns()}"
            self.rest.set_json(CONFIG, self.config)

    def add_event(self, record: dict[str, Any]) -> int:
        """Append one record to the ring (and to the stream); its id."""
        with self.lock:
            self.records.append(record)
            self.stream_lines.append(json.dumps(record).encode())
            return self.lowest + len(self.records) - 1

    def queue_max_event(self, queue: str, vcore: int, at_ns: int | None = None) -> int:
        """The QUEUE_MAX event yunikorn-core publishes when a config reload sets a max."""
        return self.add_event(
            {
                "type": 4,
                "objectID": queue,
                "timestampNano": at_ns if at_ns is not None else time.time_ns(),
                "eventChangeType": 1,
                "eventChangeDetail": 403,
                "resource": {
                    "resources": {"memory": {"value": 48 * GI}, "vcore": {"value": vcore}}
                },
            }
        )

    def fixture_event(self, index: int, at_ns: int | None = None) -> int:
        """Append the fixture's record *index* (a victim, a summary), retimed to *at_ns*."""
        record = dict(_fixture_records()[index])
        if at_ns is not None:
            record["timestampNano"] = at_ns
        return self.add_event(record)

    def _serve_start(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.rest.set_json(
            CLUSTERS,
            [
                {
                    "startTime": start_ns,
                    "rmBuildInformation": [{"buildVersion": "1.7.0", "rmId": "live"}],
                    "partition": "default",
                    "clusterName": "kubernetes",
                }
            ],
        )

    def restart(self, at_ns: int | None = None, uuid: str = "") -> dict[str, Any]:
        """The scheduler restarts at *at_ns* (now): a new ``InstanceUUID``, its event ids
        from 0 (the ring holds its first two records, a second after the start: the
        allocations it recovers), a new ``startTime`` on ``/ws/v1/clusters``. The
        queues, nodes and applications answers stay: the same allocations come back."""
        with self.lock:
            start = at_ns if at_ns is not None else time.time_ns()
            self.uuid = uuid or f"live-restart-{start}"
            first = [dict(r) for r in _fixture_records()[:2]]
            for i, record in enumerate(first):
                record["timestampNano"] = start + 10**9 + i * 1000
            self.lowest, self.records = 0, first
            self._serve_start(start)
            return {"instance": self.uuid, "start_ns": start}

    def fail(self, path: str, mode: str = "500") -> None:
        """Make an endpoint misbehave (``500``, ``hang``, ...; ``ok`` heals it)."""
        with self.lock:
            self.rest.modes[path] = mode

    def control(self, action: str, args: dict[str, Any]) -> object:
        """The HTTP control API: one of the methods above by name."""
        allowed = {
            "set_max",
            "set_config_max",
            "queue_max_event",
            "fixture_event",
            "fail",
            "restart",
        }
        if action not in allowed:
            raise KeyError(action)
        return getattr(self, action)(**args)


def live_handler(state: LiveYuniKorn) -> type[BaseHTTPRequestHandler]:
    base = make_handler(state.rest)

    class Handler(base):  # type: ignore[valid-type,misc]
        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            if not parts.path.startswith("/control/"):
                self._send(404, b'{"message":"not found"}')
                return
            length = int(self.headers.get("Content-Length") or 0)
            args = json.loads(self.rfile.read(length) or b"{}")
            try:
                result = state.control(parts.path.removeprefix("/control/"), args)
            except (KeyError, TypeError) as exc:
                self._send(400, json.dumps({"error": str(exc)}).encode())
                return
            self._send(200, json.dumps({"result": result}).encode())

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == EVENTS:
                mode = state.rest.modes.get(EVENTS, "ok")
                if mode == "500":
                    self._send(500, b'{"description":"internal error","message":"boom"}')
                    return
                start = int(parse_qs(parts.query).get("start", ["0"])[0])
                self._send(200, state.events_answer(start))
                return
            if parts.path == STREAM:
                self._stream()
                return
            super().do_GET()

        def _stream(self) -> None:
            """JSON lines: the instance, then every record added while it is open."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = len(state.stream_lines)

            def chunk(data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            try:
                chunk(json.dumps({"InstanceUUID": state.uuid}).encode() + b"\n")
                end = time.monotonic() + 30
                while time.monotonic() < end:
                    with state.lock:
                        new = state.stream_lines[sent:]
                        sent += len(new)
                    for line in new:
                        chunk(line + b"\n")
                    time.sleep(0.1)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler


@contextmanager
def live_yunikorn() -> Iterator[LiveYuniKorn]:
    """Serve a :class:`LiveYuniKorn` on a free port of 127.0.0.1."""
    state = LiveYuniKorn()
    with serving(live_handler(state)) as url:
        state.rest.url = url
        try:
            yield state
        finally:
            state.rest.release.set()
