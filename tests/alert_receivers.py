"""Local receivers for alert deliveries: a webhook server that checks the HMAC signature,
a Slack-compatible incoming webhook, and an SMTP server (aiosmtpd), each on 127.0.0.1
at a free port, recording what they got."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from dashboard.alerting import payload


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: How often the receiver's loop looks for a shutdown (socketserver's default, 0.5 s,
#: kept each test waiting up to half a second in its teardown).
SHUTDOWN_POLL = 0.02


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    signature_ok: bool | None  # None: the receiver checks no signature

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """Answers ``fail_first`` requests with ``fail_status``, then 200; a webhook receiver
    (``secret`` set) answers 401 to a request whose signature does not verify."""

    secret: str | None = None
    fail_first: int = 0
    fail_status: int = 503
    url: str = ""
    got: list[Received] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            ok: bool | None = None
            if self.secret is not None:
                ok = payload.verify(
                    self.secret,
                    headers.get(payload.TIMESTAMP_HEADER.lower(), ""),
                    body,
                    headers.get(payload.SIGNATURE_HEADER.lower(), ""),
                )
            if len(self.answered) < self.fail_first:
                status = self.fail_status
            elif ok is False:
                status = 401
            else:
                status = 200
                self.got.append(Received(headers, body, ok))
            self.answered.append(status)
            return status


@contextmanager
def http_receiver(receiver: HttpReceiver) -> Iterator[HttpReceiver]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = receiver.handle(headers, body)
            answer = b"ok" if status == 200 else b"no"
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL,), daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class MailBox:
    host: str = "127.0.0.1"
    port: int = 0
    messages: list[Message] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"


@contextmanager
def smtp_server() -> Iterator[MailBox]:
    box = MailBox(port=free_port())
    controller = Controller(box, hostname=box.host, port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()
