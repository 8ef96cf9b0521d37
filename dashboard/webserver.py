"""gunicorn's threaded worker, with every request read in its event loop before a thread.

gunicorn's ``gthread`` worker hands a connection to a thread as soon as its first
byte arrives; the thread then reads the rest of the request head (and the body) with
blocking reads.  A client sending its headers a byte every few seconds therefore
holds a thread for as long as it likes, and a few dozen of them (slowloris) hold
every thread: ``/login/`` and ``/livez`` stop answering.

:class:`BufferingThreadWorker` reads each request into memory in the worker's event
loop instead (non-blocking, like an nginx in front would): the head until its blank
line, and a body of a known length up to ``GUNICORN_BUFFER_BODY_BYTES`` (every body a
client that is not signed in may send; larger bodies are refused or read by the
thread, after the body limit middleware has checked who sends them).  Only a complete
request reaches a thread, so a slow client costs a buffer, never a thread.  A request
not read within ``GUNICORN_REQUEST_READ_TIMEOUT`` seconds is dropped, and a head larger
than ``GUNICORN_LIMIT_REQUEST_HEAD`` bytes is answered 431 at once.

It keeps everything else of the pinned gunicorn's worker (threads, keep-alive, the
parser and its limits); TLS and HTTP/2 connections, which the image does not serve
(the ingress ends TLS), take the plain worker's path.  The worker relies on the
worker's ``enqueue_req`` / ``murder_pending`` hooks and the parser's ``unreader``:
tests/deploy/test_slow_clients.py runs it against real slow clients on every change.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import selectors
import time
from typing import Any

from gunicorn.http2 import negotiation  # type: ignore[import-untyped]
from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped]

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d{1,19})[ \t]*\r\n", re.IGNORECASE)
_TRANSFER_ENCODING = re.compile(rb"\r\ntransfer-encoding[ \t]*:", re.IGNORECASE)
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n\r\n%b"
)


def _env_number(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


class _Buffer:
    """One request being read in the event loop."""

    __slots__ = ("data", "deadline")

    def __init__(self, data: bytes, deadline: float) -> None:
        self.data = bytearray(data)
        self.deadline = deadline


def request_complete(data: bytes | bytearray, body_limit: int) -> bool:
    """Whether *data* holds a request head and, when its body has a Content-Length of
    at most *body_limit* bytes, that body too (a larger or chunked body is the
    thread's to read or refuse)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = b"\r\n" + bytes(data[:end]) + b"\r\n"
    if _TRANSFER_ENCODING.search(head):
        return True
    lengths = _CONTENT_LENGTH.findall(head)
    if len(lengths) != 1:
        return True  # none, or several: the parser answers
    length = int(lengths[0])
    return length > body_limit or len(data) >= end + 4 + length


class BufferingThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """``gthread`` whose threads only ever get complete requests (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout = _env_number("GUNICORN_REQUEST_READ_TIMEOUT", 30)
        self.head_limit = int(_env_number("GUNICORN_LIMIT_REQUEST_HEAD", 65536))
        self.body_limit = int(_env_number("GUNICORN_BUFFER_BODY_BYTES", 65536))
        self.buffering: dict[Any, _Buffer] = {}

    def _plain_path(self, conn: Any) -> bool:
        return bool(self.cfg.is_ssl) or bool(
            negotiation.prior_knowledge_allowed(self.cfg, conn.client)
        )

    def enqueue_req(self, conn: Any) -> None:
        """Start reading *conn*'s next request in the event loop (a new connection, a
        kept-alive one that became readable, or one with pipelined bytes)."""
        if conn.is_http2 or (conn.parser is None and self._plain_path(conn)):
            super().enqueue_req(conn)
            return
        pending = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        buffer = _Buffer(pending, time.monotonic() + self.read_timeout)
        if request_complete(buffer.data, self.body_limit):
            self._dispatch(conn, buffer)
            return
        conn.sock.setblocking(False)
        self.buffering[conn] = buffer
        self.poller.register(conn.sock, selectors.EVENT_READ, lambda _sock: self._read(conn))

    def _read(self, conn: Any) -> None:
        buffer = self.buffering[conn]
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        buffer.data += chunk
        if request_complete(buffer.data, self.body_limit):
            self._stop_reading(conn)
            self._dispatch(conn, buffer)
        elif len(buffer.data) > self.head_limit and b"\r\n\r\n" not in buffer.data:
            self._refuse_head(conn)

    def _dispatch(self, conn: Any, buffer: _Buffer) -> None:
        conn.data_ready = True
        conn.init()  # the HTTP/1 parser, on the socket (no TLS on this path)
        conn.parser.unreader.unread(bytes(buffer.data))
        super().enqueue_req(conn)

    def _stop_reading(self, conn: Any) -> None:
        del self.buffering[conn]
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)

    def _drop(self, conn: Any) -> None:
        self._stop_reading(conn)
        self.nr_conns -= 1
        conn.close()

    def _refuse_head(self, conn: Any) -> None:
        text = (
            f"request head larger than {self.head_limit} bytes (GUNICORN_LIMIT_REQUEST_HEAD)\n"
        ).encode()
        try:
            conn.sock.send(_HEAD_TOO_LARGE % (len(text), text))
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EPIPE, errno.ECONNRESET):
                self.log.debug("431 not sent: %s", exc)
        self._drop(conn)

    def murder_pending(self) -> None:
        """gunicorn's expiry of connections waiting for data, plus requests not read in
        time (every one still being read once the worker stops)."""
        super().murder_pending()
        now = time.monotonic()
        for conn, buffer in list(self.buffering.items()):
            if buffer.deadline <= now or not self.alive:
                self._drop(conn)
