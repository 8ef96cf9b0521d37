"""The HTTP side of a cluster source: fetch a YuniKorn scheduler's REST answers as files.

No Django here.  :func:`fetch_snapshot_files` reads the endpoints YuniKorn serves
(``/ws/v1/partitions``, ``/ws/v1/partition/<p>/queues``, ``.../nodes``,
``.../applications/active``; or ``/debug/fullstatedump``) and returns them as
``{file name: bytes}`` under the fixture file names, which is exactly what the
importers' ``parse_snapshot`` takes for an upload of the same files.
:func:`fetch_events` reads one ``/ws/v1/events/batch`` answer from an event id
(incremental polling of the scheduler's own preemptions), :func:`fetch_config` the
scheduler's config in force (``/ws/v1/config``).

Each request has a timeout; transport errors, timeouts, 5xx and 429 answers are
retried with bounded exponential backoff (``backoff * 2**i``, at most
``backoff_max``); other answers fail at once.  The optional token goes out as an
``Authorization: Bearer`` header and never into an error message: every
message is built from the endpoint path and the status, and is scrubbed of the
token as well.  Redirects are not followed (a token must not travel to another
address); answers above ``max_bytes`` are cut off with an error.

Messages never echo what the target sent (reason phrases, redirect locations,
protocol garbage): they are read by every user in ``last_error``.  With an address
policy (:mod:`dashboard.sources.addresses`) every request's host is resolved once,
checked, and connected to at the checked address.
"""

from __future__ import annotations

import functools
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from dashboard.sources import deadline
from dashboard.sources.addresses import AddressPolicy, AddressRefused

if TYPE_CHECKING:
    import httpx

USER_AGENT = "yunikorn-preemption-dashboard/1 (cluster source poller)"

STATE_DUMP = ("fullstatedump.json", "/debug/fullstatedump")


def rest_endpoints(partition: str) -> tuple[tuple[str, str], ...]:
    """(file name, path) of every REST endpoint a poll reads for *partition*."""
    p = quote(partition, safe="")
    return (
        ("partitions.json", "/ws/v1/partitions"),
        ("partition_queues.json", f"/ws/v1/partition/{p}/queues"),
        ("partition_nodes.json", f"/ws/v1/partition/{p}/nodes"),
        ("partition_applications_active.json", f"/ws/v1/partition/{p}/applications/active"),
    )


class FetchError(Exception):
    """A poll that could not read an endpoint; ``endpoint`` is its path."""

    def __init__(self, endpoint: str, message: str, *, attempts: int = 1) -> None:
        super().__init__(f"{endpoint}: {message}")
        self.endpoint = endpoint
        self.message = message
        self.attempts = attempts


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """Timeout (seconds per request), retries after the first try, backoff bounds, size cap."""

    timeout: float = 10.0
    retries: int = 2
    backoff: float = 0.5
    backoff_max: float = 8.0
    max_bytes: int = 50 * 1024 * 1024

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number *retry* (0-based), bounded by ``backoff_max``.

        >>> FetchPolicy(backoff=0.5, backoff_max=3.0).delay(0), FetchPolicy(backoff=0.5,
        ...     backoff_max=3.0).delay(5)
        (0.5, 3.0)
        """
        return float(min(self.backoff * (2**retry), self.backoff_max))


@dataclass
class FetchResult:
    files: dict[str, bytes]
    attempts: dict[str, int] = field(default_factory=dict)
    slept: list[float] = field(default_factory=list)


class _Retryable(Exception):
    pass


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "***") if token else text


def _reason(exc: httpx.HTTPError) -> str:
    """What went wrong, in our words: an OS-level connection error's text is the
    system's, anything the target sent (a malformed answer) is left out."""
    import httpx  # loaded by a poll, not by every process that imports this module

    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"{type(exc).__name__}: {exc or 'could not connect'}"
    return f"{type(exc).__name__}: the connection failed or the answer was not valid HTTP"


def _phrase(status: int) -> str:
    """The standard reason phrase of *status* (never the one the target sent)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "(non-standard status)"


def _get(
    client: httpx.Client,
    url: str,
    path: str,
    policy: FetchPolicy,
    token: str,
    post: bytes | None = None,
) -> bytes:
    """One GET (a POST of *post* when given), read up to the size cap; raises _Retryable
    or FetchError."""
    import httpx

    method = "GET" if post is None else "POST"
    try:
        # each wait for bytes bounded by the request timeout and by the poll's deadline
        timeout = deadline.bounded(policy.timeout)
        with client.stream(method, url, content=post, timeout=timeout) as response:
            status = response.status_code
            if status >= 500 or status == 429:
                raise _Retryable(f"HTTP {status} {_phrase(status)}")
            if 300 <= status < 400:
                raise FetchError(
                    path,
                    f"HTTP {status} {_phrase(status)}: the scheduler answered with a redirect, "
                    "which is not followed; point the base URL at the scheduler's own address",
                )
            if status in (401, 403):
                raise FetchError(path, f"HTTP {status} {_phrase(status)}: check the source's token")
            if status != 200:
                raise FetchError(path, f"HTTP {status} {_phrase(status)}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                deadline.remaining()  # a trickling answer stops at the poll's deadline
                size += len(chunk)
                if size > policy.max_bytes:
                    raise FetchError(
                        path,
                        f"answer larger than {policy.max_bytes} bytes (SOURCES_MAX_ANSWER_BYTES)",
                    )
                chunks.append(chunk)
            return b"".join(chunks)
    except AddressRefused as exc:
        raise FetchError(path, f"address refused: {exc}") from None
    except deadline.DeadlineExceeded as exc:
        raise FetchError(path, str(exc)) from None
    except httpx.HTTPError as exc:
        try:
            deadline.remaining()  # a timeout cut short by the deadline is not retried
        except deadline.DeadlineExceeded as late:
            raise FetchError(path, str(late)) from None
        raise _Retryable(_scrub(_reason(exc), token)) from exc


def tls_context(verify: bool, *, trust_env: bool) -> ssl.SSLContext:
    """The TLS context of a scheduler's client, made once per process and kind.

    httpx builds one per client otherwise, loading the CA bundle each time: 17 ms of CPU,
    about seven times a poll (the answers, the events, the config, the health, the usage
    and the completed applications each have a client), a fifth of a 1 % poll of a
    10,000-allocation cluster (docs/benchmarks/fleet.md). ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` are honoured as httpx does (with *trust_env*), read at each call.
    """
    env = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    return _tls_context(verify, trust_env, env if trust_env else ("", ""))


@functools.lru_cache(maxsize=8)
def _tls_context(verify: bool, trust_env: bool, _env: tuple[str, str]) -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context(verify=verify, trust_env=trust_env)


def _client(
    token: str,
    policy: FetchPolicy,
    verify_tls: bool,
    transport: httpx.BaseTransport | None,
    addresses: AddressPolicy | None,
) -> httpx.Client:
    """The HTTP client every request to a scheduler goes through: JSON, the bearer token
    when set, no redirects followed, and the address policy checked after DNS."""
    import httpx

    from dashboard.sources.transport import PolicyTransport

    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    tls = tls_context(verify_tls, trust_env=addresses is None)
    if transport is None and addresses is not None:
        transport = PolicyTransport(addresses, verify=tls)
    return httpx.Client(
        headers=headers,
        timeout=policy.timeout,
        follow_redirects=False,
        verify=tls,
        transport=transport,
        # with an address policy, no proxy from the environment: a proxy would resolve
        # and connect past the checked address
        trust_env=addresses is None,
    )


def fetch_snapshot_files(
    base_url: str,
    partition: str,
    *,
    token: str = "",
    use_state_dump: bool = False,
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
) -> FetchResult:
    """Read the scheduler's state as files named like the fixtures (see module docstring).

    Args:
        base_url: scheme, host, port and optional path prefix (no trailing slash needed).
        partition: the YuniKorn partition to read.
        token: sent as ``Authorization: Bearer <token>`` when not empty.
        use_state_dump: read ``/debug/fullstatedump`` instead of the four endpoints.
        policy: timeout, retries and backoff.
        sleep: waits between retries (tests pass a recorder instead of sleeping).
        transport: an httpx transport (tests only).
        addresses: the address policy checked after DNS for every request (see
            :mod:`dashboard.sources.addresses`); ``None`` checks nothing.

    Raises:
        FetchError: naming the endpoint, after the last retry.
    """
    policy = policy or FetchPolicy()
    endpoints = (STATE_DUMP,) if use_state_dump else rest_endpoints(partition)
    result = FetchResult(files={})
    root = base_url.rstrip("/")
    with _client(token, policy, verify_tls, transport, addresses) as client:
        for name, path in endpoints:
            result.files[name], result.attempts[name] = _get_retrying(
                client, root, path, policy, token, sleep, result.slept
            )
    return result


def _get_retrying(
    client: httpx.Client,
    root: str,
    path: str,
    policy: FetchPolicy,
    token: str,
    sleep: Callable[[float], None],
    slept: list[float],
    post: bytes | None = None,
) -> tuple[bytes, int]:
    """One endpoint with the retries of *policy*: (body, attempts); FetchError after the last."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return _get(client, root + path, path.split("?", 1)[0], policy, token, post), attempt
        except _Retryable as exc:
            if attempt > policy.retries:
                tries = "try" if attempt == 1 else "tries"
                raise FetchError(
                    path.split("?", 1)[0], f"{exc} (after {attempt} {tries})", attempts=attempt
                ) from None
            try:
                wait = deadline.bounded(policy.delay(attempt - 1))
            except deadline.DeadlineExceeded as late:
                raise FetchError(path.split("?", 1)[0], str(late), attempts=attempt) from None
            slept.append(wait)
            sleep(wait)


EVENTS = "/ws/v1/events/batch"


def _fetch_one(
    base_url: str,
    path: str,
    token: str,
    verify_tls: bool,
    policy: FetchPolicy | None,
    sleep: Callable[[float], None],
    transport: httpx.BaseTransport | None,
    addresses: AddressPolicy | None,
) -> bytes:
    """One answer of *path* (query included) through the sources' client and retries."""
    policy = policy or FetchPolicy()
    with _client(token, policy, verify_tls, transport, addresses) as client:
        body, _ = _get_retrying(client, base_url.rstrip("/"), path, policy, token, sleep, [])
    return body


def fetch_events(
    base_url: str,
    start: int,
    *,
    count: int | None = None,
    token: str = "",
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
) -> bytes:
    """One ``GET /ws/v1/events/batch?start=N[&count=M]`` answer, with the same retries,
    token handling, redirect refusal, size cap and address policy as
    :func:`fetch_snapshot_files`.

    Record *i* of the answer is event ``start + i``; the scheduler answers no
    records (and its ``LowestID``) when *start* has left its ring buffer, so an
    incremental poller asks again from ``LowestID`` (see
    :attr:`dashboard.importers.events.EventsImport.next_start`).
    """
    query = f"?start={int(start)}" + (f"&count={int(count)}" if count is not None else "")
    return _fetch_one(
        base_url, EVENTS + query, token, verify_tls, policy, sleep, transport, addresses
    )


VALIDATE_CONF = "/ws/v1/validate-conf"


def validate_conf(
    base_url: str,
    queues_yaml: bytes,
    *,
    token: str = "",
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
) -> bytes:
    """The scheduler's verdict on a config, ``POST /ws/v1/validate-conf`` with the
    queues.yaml text as body (it changes nothing in the scheduler, so it is retried like
    a GET), answered ``{"allowed": bool, "reason": "..."}``."""
    policy = policy or FetchPolicy()
    with _client(token, policy, verify_tls, transport, addresses) as client:
        body, _ = _get_retrying(
            client, base_url.rstrip("/"), VALIDATE_CONF, policy, token, sleep, [], queues_yaml
        )
    return body


def fetch_answer(
    base_url: str,
    path: str,
    *,
    token: str = "",
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
) -> bytes:
    """Any other answer of the scheduler's REST API (*path* from its root), with the same
    retries, token handling, redirect refusal, size cap and address policy."""
    return _fetch_one(base_url, path, token, verify_tls, policy, sleep, transport, addresses)


CONFIG = "/ws/v1/config"


def fetch_config(
    base_url: str,
    *,
    token: str = "",
    verify_tls: bool = True,
    policy: FetchPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
    addresses: AddressPolicy | None = None,
) -> bytes:
    """The scheduler's config in force, ``GET /ws/v1/config``, as JSON (the client's
    ``Accept: application/json``; the endpoint answers YAML otherwise), with the same
    retries, token handling, redirect refusal, size cap and address policy as
    :func:`fetch_snapshot_files`."""
    return _fetch_one(base_url, CONFIG, token, verify_tls, policy, sleep, transport, addresses)


def check_base_url(url: str) -> str:
    """The base URL normalised (no trailing slash); ValueError naming what is wrong.

    >>> check_base_url("http://yunikorn-service.yunikorn:9080/")
    'http://yunikorn-service.yunikorn:9080'
    """
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("must name a host, e.g. http://yunikorn-service.yunikorn:9080")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold credentials; put a bearer token in the token field")
    if parts.query or parts.fragment:
        raise ValueError("must not have a query string or fragment")
    if port == 0:
        raise ValueError("port 0 is not a valid port")
    if any(c.isspace() for c in text):
        raise ValueError("must not contain spaces")
    return text.rstrip("/")
