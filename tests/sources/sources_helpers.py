"""Shared pieces of the cluster-source tests: fixture paths and a YuniKorn-shaped HTTP server.

The server (``http.server`` in a thread on a free port of 127.0.0.1) serves the REST
shapes from ``shared/fixtures/yunikorn/rest/`` (found beside the repository, as CI
clones it).  Tests switch an endpoint to misbehave (hang past the client's timeout,
answer 500, truncated JSON, a wrong shape, a short body) and read back which
requests (and headers) it saw.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dashboard import services
from dashboard.sources import services as sources
from dashboard.sources.configpoll import default_config_fetcher
from dashboard.sources.models import ClusterSource

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REST = SHARED / "fixtures" / "yunikorn" / "rest"
CONFIG = SHARED / "fixtures" / "yunikorn" / "config"
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)

#: How often the test server's loop looks for a shutdown (socketserver's default, 0.5 s,
#: kept each test waiting up to half a second in its teardown).
SHUTDOWN_POLL = 0.02

REST_FILES = {
    "/ws/v1/partitions": "partitions.json",
    "/ws/v1/partition/default/queues": "partition_queues.json",
    "/ws/v1/partition/default/nodes": "partition_nodes.json",
    "/ws/v1/partition/default/applications/active": "partition_applications_active.json",
    "/debug/fullstatedump": "fullstatedump.json",
}


def fixture_files(*names: str) -> dict[str, bytes]:
    """Fixture REST files by name, as an upload would send them."""
    return {n: (REST / n).read_bytes() for n in names}


POLLED_FILES = (
    "partitions.json",
    "partition_queues.json",
    "partition_nodes.json",
    "partition_applications_active.json",
)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)


@dataclass
class FakeYuniKorn:
    """What the test server answers; mutable while it runs."""

    bodies: dict[str, bytes]
    modes: dict[str, str] = field(default_factory=dict)
    required_token: str | None = None
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def set_json(self, path: str, doc: Any) -> None:
        self.bodies[path] = json.dumps(doc, separators=(",", ":")).encode()

    def json(self, path: str) -> Any:
        return json.loads(self.bodies[path])

    def requests_to(self, path: str) -> int:
        with self.lock:
            return sum(1 for s in self.seen if s.path == path)


def rest_server_state() -> FakeYuniKorn:
    """A test server's state answering every REST endpoint with its fixture file."""
    return FakeYuniKorn(bodies={p: (REST / n).read_bytes() for p, n in REST_FILES.items()})


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], *, daemon_threads: bool = True) -> Iterator[str]:
    """Serve *handler* from a thread on a free port of 127.0.0.1; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = daemon_threads
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def make_handler(state: FakeYuniKorn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def _send(self, status: int, body: bytes, length: int | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            with state.lock:
                state.seen.append(Seen(path, {k.lower(): v for k, v in self.headers.items()}))
            expected = f"Bearer {state.required_token}"
            if state.required_token is not None and self.headers.get("Authorization") != expected:
                self._send(401, b'{"description":"unauthorized","message":"no token"}')
                return
            body = state.bodies.get(path)
            if body is None:
                self._send(404, b'{"message":"not found"}')
                return
            mode = state.modes.get(path, "ok")
            if mode == "hang":
                state.release.wait(10)
                self.close_connection = True
                return
            if mode == "500":
                self._send(500, b'{"description":"internal error","message":"boom"}')
                return
            if mode == "truncated":
                self._send(200, body[: len(body) // 2])
                return
            if mode == "short_body":  # announces more than it sends, then hangs up
                self._send(200, body[: len(body) // 2], length=len(body))
                self.close_connection = True
                return
            if mode.startswith("reason:"):  # a 403 whose reason phrase is the target's text
                self.send_response(403, mode.split(":", 1)[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode.startswith("redirect:"):
                self.send_response(302)
                self.send_header("Location", mode.split(":", 1)[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "wrong_shape":
                self._send(200, b'{"unexpected": ["not", "a", "YuniKorn", "answer"]}')
                return
            self._send(200, body)

    return Handler


class SleepRecorder:
    """Stands in for time.sleep between retries: records the waits, never sleeps."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def poll_live(source: ClusterSource, at: datetime, *, config: bool = False) -> sources.PollOutcome:
    """One forced poll of *source* at *at* over HTTP, its retries never sleeping; with
    *config*, the scheduler's config is read the same way."""
    return sources.poll_source(
        source.pk,
        now=at,
        force=True,
        fetch=sources.default_fetcher(sleep=SleepRecorder()),
        events=sources.default_events_fetcher(sleep=SleepRecorder()),
        config=default_config_fetcher(sleep=SleepRecorder()) if config else None,
    )


def snapshot_rows(snapshot: Any) -> dict[str, Any]:
    """Everything a stored snapshot holds, without ids and times: for equality checks."""
    # spans: which snapshots share them differs between the two, not what they hold
    drop = {"id", "snapshot", "snapshot_id", "partition_id", "first_seen", "gone_in"}

    def rows(qs: Any, key: str) -> list[dict[str, Any]]:
        return sorted(
            ({k: v for k, v in r.items() if k not in drop} for r in qs.values()),
            key=lambda r: r[key],
        )

    return {
        "partition": snapshot.partition.name,
        "source_kind": snapshot.source_kind,
        "scenario": services.stored_scenario(snapshot),
        "checksum": snapshot.checksum,
        "warnings": snapshot.warnings,
        "queues": rows(snapshot.queues, "path"),
        "nodes": rows(services.snapshot_nodes(snapshot), "node_id"),
        "allocations": rows(services.snapshot_allocations(snapshot), "key"),
        "asks": rows(snapshot.asks, "key"),
        "applications": rows(services.snapshot_applications(snapshot), "app_id"),
    }
