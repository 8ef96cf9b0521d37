"""The scheduler's event stream: read ``GET /ws/v1/events/stream`` for a bounded time.

No Django here.  yunikorn-core answers the stream (``getStream`` in
``pkg/webservice/handlers.go``) as JSON lines: first ``{"InstanceUUID": ...}``,
then one ``si.EventRecord`` per line as the scheduler publishes it (the same
objects ``/ws/v1/events/batch`` lists, without ids), flushed one by one, with no
heartbeat.  ``?count=N`` first replays up to N past events from the ring buffer;
``count=0`` (what is asked here) only what happens from now on.  The scheduler
refuses a stream with 503 when its stream limits are reached (``event.maxStreams``,
``event.maxStreamsPerHost``), with 500 when event tracking is off, and closes a
stream whose consumer fell 1,000 events behind (its last line is then an error
object, or the connection simply ends).  A scheduler older than the stream answers
404.

:func:`read_stream` opens the stream with the same client as every other request
(bearer token, no redirects, the address policy checked after DNS, a size cap), reads
lines until *window* seconds have passed or *stop* says enough, and returns what it
read.  A stream cut in the middle of a line keeps the complete lines before it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dashboard.sources.addresses import AddressPolicy, AddressRefused
from dashboard.sources.client import FetchError, FetchPolicy, _client, _phrase, _reason, _scrub

if TYPE_CHECKING:
    import httpx

STREAM = "/ws/v1/events/stream"


class StreamUnavailable(FetchError):
    """The scheduler answered the stream request with an error status (404: no stream)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(STREAM, message)
        self.status = status


@dataclass
class StreamRead:
    """What one bounded read of the stream saw.

    ``records`` are the event records in order (decoded JSON objects); ``ended`` says
    why the read stopped: ``"window"`` (the time was up), ``"stopped"`` (*stop* said
    enough), ``"closed"`` (the scheduler ended the stream) or ``"cut"`` (the connection
    broke, possibly in the middle of a line).
    """

    instance_uuid: str = ""
    records: list[dict[str, Any]] = field(default_factory=list)
    ended: str = "window"
    bytes_read: int = 0
    closed_by_scheduler: str = ""
    """The scheduler's own reason when it closed the stream (an error object line)."""


def read_stream(
    base_url: str,
    *,
    window: float,
    token: str = "",
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    stop: Callable[[dict[str, Any]], bool] | None = None,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> StreamRead:
    """Read ``/ws/v1/events/stream?count=0`` for at most *window* seconds.

    *stop* is asked after each record; when it answers true the read ends at once
    (a change that needs a poll needs no more waiting).  Each network read waits at
    most the time left in the window, so an idle stream costs one open connection
    and returns when the window ends.

    Raises:
        StreamUnavailable: the scheduler answered with an error status.
        FetchError: the stream could not be opened, the address was refused, a line
            was not JSON or the answer went over the size cap.
    """
    import httpx  # loaded by a live source's follow, not by every process importing this

    policy = policy or FetchPolicy()
    deadline = clock() + window
    # the read timeout bounds each wait for bytes; the window bounds the whole read
    timed = FetchPolicy(
        timeout=max(min(policy.timeout, window), 0.05),
        retries=0,
        max_bytes=policy.max_bytes,
    )
    read = StreamRead()
    url = base_url.rstrip("/") + STREAM + "?count=0"
    try:
        with _client(token, timed, verify_tls, transport, addresses) as client:
            timeout = httpx.Timeout(timed.timeout, read=max(window, 0.05))
            with client.stream("GET", url, timeout=timeout) as response:
                status = response.status_code
                if status != 200:
                    raise StreamUnavailable(_status_message(status), status)
                _read_lines(response, read, deadline, clock, stop, policy.max_bytes)
    except AddressRefused as exc:
        raise FetchError(STREAM, f"address refused: {exc}") from None
    except httpx.TimeoutException:
        read.ended = "window" if clock() >= deadline - 0.01 else "cut"
        if read.ended == "cut" and not read.instance_uuid:
            raise FetchError(STREAM, "timed out before the stream started") from None
    except httpx.HTTPError as exc:
        if not read.instance_uuid:
            raise FetchError(STREAM, _scrub(_reason(exc), token)) from None
        read.ended = "cut"
    return read


def _status_message(status: int) -> str:
    base = f"HTTP {status} {_phrase(status)}"
    if status == 404:
        return f"{base}: this scheduler has no event stream (YuniKorn before 1.6?)"
    if status == 503:
        return f"{base}: the scheduler's limit of event streams is reached"
    if status in (401, 403):
        return f"{base}: check the source's token"
    if 300 <= status < 400:
        return f"{base}: the scheduler answered with a redirect, which is not followed"
    return base


def _read_lines(
    response: httpx.Response,
    read: StreamRead,
    deadline: float,
    clock: Callable[[], float],
    stop: Callable[[dict[str, Any]], bool] | None,
    max_bytes: int,
) -> None:
    pending = b""
    for chunk in response.iter_bytes():
        read.bytes_read += len(chunk)
        if read.bytes_read > max_bytes:
            raise FetchError(
                STREAM, f"stream larger than {max_bytes} bytes (SOURCES_MAX_ANSWER_BYTES)"
            )
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            if _line(line, read) and stop is not None and stop(read.records[-1]):
                read.ended = "stopped"
                return
            if read.closed_by_scheduler:
                read.ended = "closed"
                return
        if clock() >= deadline:
            read.ended = "window"
            return
    # the scheduler ended the stream; an unfinished last line means it was cut
    read.ended = "cut" if pending.strip() else "closed"


def _line(line: bytes, read: StreamRead) -> bool:
    """Take one line; True when it was an event record."""
    try:
        doc = json.loads(line)
    except ValueError:
        raise FetchError(STREAM, "a line of the stream is not JSON") from None
    if not isinstance(doc, dict):
        raise FetchError(STREAM, "a line of the stream is not a JSON object")
    if not read.instance_uuid and "InstanceUUID" in doc:
        read.instance_uuid = str(doc["InstanceUUID"])
        return False
    if "StatusCode" in doc and "Message" in doc:  # dao.YAPIError: the scheduler closed it
        read.closed_by_scheduler = str(doc.get("Message"))[:200]
        return False
    read.records.append(doc)
    return True
