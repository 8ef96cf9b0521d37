"""Sending one delivery over its route's channel: signed webhook, Slack, e-mail.

HTTP targets go through the cluster sources' :class:`~dashboard.sources.transport.PolicyTransport`
with the address policy in force (``SOURCES_*`` settings): the host is resolved once,
every address checked, and the checked address connected to; redirects are not followed.

Each sender returns nothing or raises :class:`SendFailed`, saying whether a later
try may succeed (no connection, a timeout, HTTP 408, 429 or 5xx, an SMTP server
that is down or answers 4xx) or not (a refused address, another HTTP 4xx, a
recipient refused for good).
"""

from __future__ import annotations

import smtplib
import time
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from dashboard.alerting import payload
from dashboard.models.alerting import AlertRoute, split_addresses
from dashboard.sources.addresses import AddressRefused, policy_from_settings
from dashboard.sources.transport import PolicyTransport

RETRYABLE_HTTP = frozenset({408, 425, 429})


@dataclass
class SendFailed(Exception):
    message: str
    retryable: bool
    status: int | None = None

    def __str__(self) -> str:
        return self.message


ANSWER_READ_BYTES = 4096  # of a receiver's answer, only for the error message


def timeout() -> httpx.Timeout:
    """Short connect and per-read/write timeouts: a receiver that accepts and never
    answers gives up the delivery worker after ALERT_HTTP_TIMEOUT seconds."""
    per_op = float(getattr(settings, "ALERT_HTTP_TIMEOUT", 5.0))
    connect = float(getattr(settings, "ALERT_CONNECT_TIMEOUT", 3.0))
    return httpx.Timeout(per_op, connect=connect, pool=connect)


def _post(url: str, content: bytes, headers: dict[str, str]) -> int:
    transport = PolicyTransport(policy_from_settings(), retries=0)
    try:
        with httpx.Client(transport=transport, timeout=timeout(), follow_redirects=False) as client:
            request = client.build_request("POST", url, content=content, headers=headers)
            answer = client.send(request, stream=True)
            try:
                status = answer.status_code
                if 200 <= status < 300:
                    return status
                # only the start of a refusal is read: a trickling answer ends here too
                head = b""
                for chunk in answer.iter_raw():
                    head += chunk
                    if len(head) >= ANSWER_READ_BYTES:
                        break
            finally:
                answer.close()
    except AddressRefused as exc:
        raise SendFailed(f"target refused by the address policy: {exc}", retryable=False) from None
    except httpx.TimeoutException as exc:
        raise SendFailed(f"timed out: {type(exc).__name__}", retryable=True) from None
    except httpx.HTTPError as exc:
        raise SendFailed(f"cannot reach the target: {exc}", retryable=True) from None
    snippet = head[:200].decode("utf-8", "replace").replace("\n", " ")
    retry = status >= 500 or status in RETRYABLE_HTTP
    raise SendFailed(f"HTTP {status} from the target: {snippet}", retryable=retry, status=status)


def send_webhook(route: AlertRoute, body: payload.WebhookBody, now_epoch: int | None = None) -> int:
    content = payload.encode(body)
    timestamp = int(time.time()) if now_epoch is None else now_epoch
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "yunikorn-preemption-dashboard",
        payload.TIMESTAMP_HEADER: str(timestamp),
        payload.SIGNATURE_HEADER: payload.sign(str(route.secret), timestamp, content),
        payload.DELIVERY_HEADER: str(body["delivery"]),
    }
    return _post(route.url, content, headers)


def send_slack(route: AlertRoute, body: payload.WebhookBody) -> int:
    text = payload.slack_text(body["alert"], test=body["test"])
    content = payload.encode_slack(text)
    return _post(route.url, content, {"Content-Type": "application/json"})


def send_email(route: AlertRoute, body: payload.WebhookBody) -> None:
    """Through Django's SMTP backend (``EMAIL_HOST``, ``EMAIL_PORT`` and friends), each
    SMTP operation within ``ALERT_EMAIL_TIMEOUT`` seconds."""
    backend = getattr(
        settings, "ALERT_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
    )
    message = EmailMessage(
        subject=payload.email_subject(body["alert"], test=body["test"]),
        body=payload.email_text(body["alert"], test=body["test"]),
        from_email=getattr(settings, "ALERT_EMAIL_FROM", None) or settings.DEFAULT_FROM_EMAIL,
        to=split_addresses(route.email_to),
        headers={payload.DELIVERY_HEADER: str(body["delivery"])},
    )
    try:
        timeout = float(getattr(settings, "ALERT_EMAIL_TIMEOUT", 10.0))
        with get_connection(backend, fail_silently=False, timeout=timeout) as connection:
            connection.send_messages([message])
    except smtplib.SMTPRecipientsRefused as exc:
        codes = {code for code, _ in exc.recipients.values()}
        raise SendFailed(
            f"recipients refused: {exc.recipients}", retryable=all(400 <= c < 500 for c in codes)
        ) from None
    except smtplib.SMTPResponseException as exc:
        raise SendFailed(
            f"SMTP {exc.smtp_code}: {exc.smtp_error!r}", retryable=400 <= exc.smtp_code < 500
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(f"cannot send the e-mail: {exc}", retryable=True) from None


def send(route: AlertRoute, body: payload.WebhookBody) -> int | None:
    """Send *body* over *route*; the HTTP status, or None for e-mail."""
    if route.channel == AlertRoute.Channel.WEBHOOK:
        return send_webhook(route, body)
    if route.channel == AlertRoute.Channel.SLACK:
        return send_slack(route, body)
    if route.channel == AlertRoute.Channel.EMAIL:
        send_email(route, body)
        return None
    raise SendFailed(f"unknown channel {route.channel!r}", retryable=False)
