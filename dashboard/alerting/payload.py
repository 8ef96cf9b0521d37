"""What a delivery sends: the webhook's JSON body (schema ``yunikorn-dashboard.alert.v1``,
documented in docs/operations/alert-routing.md), its HMAC-SHA256 signature, the Slack
message and the e-mail text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import NotRequired, TypedDict

SCHEMA = "yunikorn-dashboard.alert.v1"
SIGNATURE_HEADER = "X-Dashboard-Signature"
TIMESTAMP_HEADER = "X-Dashboard-Timestamp"
DELIVERY_HEADER = "X-Dashboard-Delivery"


class AlertBody(TypedDict):
    id: int | None
    kind: str
    kind_label: str
    level: str
    message: str
    cluster: str | None
    partition: str | None
    queue: str | None
    run: int | None
    change: int | None
    count: int
    created_at: str
    last_seen_at: str


class DigestEntry(TypedDict):
    id: int
    kind: str
    level: str
    message: str
    cluster: str | None
    queue: str | None
    created_at: str


class WebhookBody(TypedDict):
    schema: str
    delivery: int
    test: bool
    route: str
    alert: AlertBody
    # a digest only: the held alerts it carries (``alert`` then summarises them)
    digest: NotRequired[list[DigestEntry]]


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def alert_body(
    *,
    alert_id: int | None,
    kind: str,
    kind_label: str,
    level: str,
    message: str,
    cluster: str | None,
    partition: str | None,
    queue: str,
    run: int | None,
    change: int | None,
    count: int,
    created_at: datetime,
    last_seen_at: datetime,
) -> AlertBody:
    return {
        "id": alert_id,
        "kind": kind,
        "kind_label": kind_label,
        "level": level,
        "message": message,
        "cluster": cluster,
        "partition": partition,
        "queue": queue or None,
        "run": run,
        "change": change,
        "count": count,
        "created_at": _iso(created_at),
        "last_seen_at": _iso(last_seen_at),
    }


def digest_entry(
    *,
    alert_id: int,
    kind: str,
    level: str,
    message: str,
    cluster: str | None,
    queue: str,
    created_at: datetime,
) -> DigestEntry:
    return {
        "id": alert_id,
        "kind": kind,
        "level": level,
        "message": message,
        "cluster": cluster,
        "queue": queue or None,
        "created_at": _iso(created_at),
    }


def encode(body: WebhookBody) -> bytes:
    """The exact bytes sent (and signed): compact JSON, keys sorted, UTF-8."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256, keyed by the
    route's secret, of the timestamp, a full stop and the body bytes.

    >>> sign("s3cret", 1700000000, b"{}")[:15]
    'sha256=97926816'
    """
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """What a receiver does (the tests' receivers use it): constant-time comparison."""
    if not timestamp.isdigit():
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


def slack_text(body: AlertBody, *, test: bool) -> str:
    """One Slack mrkdwn line: level, kind, where, the message (Slack escapes applied)."""
    where = " / ".join(x for x in (body["cluster"], body["partition"], body["queue"]) if x)
    text = f"[{body['level'].upper()}] {body['kind_label']}"
    if where:
        text += f" ({where})"
    text += f": {body['message']}"
    if test:
        text = "Test delivery: " + text
    # Slack reads &, < and > as markup; these three escapes are the ones it documents
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: The longest e-mail subject written (the whole message is in the body).
SUBJECT_MAX_CHARS = 200


def shorten(text: str, limit: int) -> str:
    """*text* cut to at most *limit* characters at a word boundary, with an ellipsis,
    never inside a parenthesis or bracket it opened (the cut goes before it).

    >>> shorten("root.a: usage rose (change 12; timer from the scheduler)", 30)
    'root.a: usage rose …'
    """
    if len(text) <= limit:
        return text
    cut = text[: limit - 2]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    depth = 0
    opened: list[int] = []
    for i, char in enumerate(cut):
        if char in "([{":
            opened.append(i)
            depth += 1
        elif char in ")]}" and depth:
            opened.pop()
            depth -= 1
    if opened and cut[: opened[0]].strip():  # (a text all in one parenthesis is cut inside)
        cut = cut[: opened[0]]
    return cut.rstrip(" ,;:") + " …"


def email_subject(body: AlertBody, *, test: bool) -> str:
    where = f" [{body['cluster']}]" if body["cluster"] else ""
    prefix = "[test] " if test else ""
    first_line = body["message"].splitlines()[0] if body["message"] else ""
    subject = f"{prefix}{body['level'].upper()}{where} {body['kind_label']}: {first_line}"
    return shorten(subject, SUBJECT_MAX_CHARS)


def email_text(body: AlertBody, *, test: bool) -> str:
    lines = ["A test delivery of the YuniKorn preemption dashboard.", ""] if test else []
    lines += [
        f"Level: {body['level']}",
        f"Kind: {body['kind_label']} ({body['kind']})",
        f"Cluster: {body['cluster'] or '-'}",
        f"Partition: {body['partition'] or '-'}",
        f"Queue: {body['queue'] or '-'}",
        f"Raised: {body['created_at']} (seen {body['count']} times, last {body['last_seen_at']})",
        "",
        body["message"],
    ]
    return "\n".join(lines) + "\n"


def encode_slack(text: str) -> bytes:
    """A Slack incoming webhook's body: ``{"text": ...}`` (Mattermost and others read it too)."""
    return json.dumps({"text": text}, ensure_ascii=False).encode()
