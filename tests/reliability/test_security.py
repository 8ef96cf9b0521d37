"""Security: production settings, write permissions on every endpoint, CSRF, login rate
limiting, secrets kept out of pages / API / logs, and user text escaped wherever shown.

The write-permission and CSRF tests do not rely on a hand-kept list: they walk the
URL configuration (admin, REST router, cluster-source routes, pages) and try
POST, PUT, PATCH and DELETE on every route.  Each refused request must send no
statement that writes (INSERT, UPDATE, DELETE, ...) on any database connection, and
a digest of every row of every model is the same after the whole walk as before it.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from reliability_support import PASSWORD, reads_open_to_viewers, scenario
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from support.queries import captured_writes

from dashboard import models, services
from dashboard.sources import services as source_services
from dashboard.sources.client import rest_endpoints
from dashboard.sources.models import ClusterSource, SourceSnapshot

ROOT = Path(__file__).resolve().parents[2]
UNSAFE = ("post", "put", "patch", "delete")
# Sign-in and sign-out are the writes an anonymous or non-staff user may make.
# "access" issues the signed-in user's own API token (as "api-token" does)
AUTH_ENDPOINTS = {"login", "logout", "admin:login", "admin:logout", "api-token", "access"}

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(300)]


# --------------------------------------------------------------------------- routes


def _patterns(
    patterns: list[URLPattern | URLResolver], ns: str = ""
) -> Iterator[tuple[str, list[str]]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p.url_patterns, f"{ns}{p.namespace}:" if p.namespace else ns)
        elif p.name:
            yield f"{ns}{p.name}", list(p.pattern.regex.groupindex)


PAGE_MODELS = {
    "change": "dashboard.quotachange",
    "change_edit": "dashboard.quotachange",
    "change_cancel": "dashboard.quotachange",
    "alert_ack": "dashboard.alert",
    "run": "dashboard.preemptionrun",
    "run_wait": "dashboard.preemptionrun",
    "config": "dashboard.configversion",
    "quota-change-config": "dashboard.quotachange",
    "alert_route": "dashboard.alertroute",
    "alert_route_test": "dashboard.alertroute",
}


def _model_key(name: str) -> str | None:
    """The model whose primary key a route takes, from the route's name."""
    ns, _, short = name.rpartition(":")
    if short in PAGE_MODELS:
        return PAGE_MODELS[short]
    for model in apps.get_models():
        label = f"{model._meta.app_label}.{model._meta.model_name}"
        if ns == "admin" and short.startswith(f"{model._meta.app_label}_{model._meta.model_name}_"):
            return label
        if not ns and short.split("-")[0] == model._meta.model_name:
            return label
    return None


def _any_row(label: str) -> object:
    """The key of some row of a model the fixture did not make (0 when it has none)."""
    pk = apps.get_model(label)._default_manager.values_list("pk", flat=True).first()
    return 0 if pk is None else pk


def concrete_urls(objects: dict[str, object]) -> list[tuple[str, str]]:
    """(route name, URL) of every named route, with the keys of existing rows filled in.

    Skipped: format-suffix twins of a route (the same view), the admin's
    view-on-site redirect and catch-all (they take no key of ours).
    """
    out: dict[str, str] = {}
    for name, kwargs in _patterns(get_resolver().url_patterns):
        if {"format", "content_type_id", "url"} & set(kwargs):
            continue
        values: dict[str, object] = {}
        for k in kwargs:
            if k in ("a", "b"):
                values[k] = objects["dashboard.clustersnapshot"]
            elif k == "app_label":
                values[k] = "dashboard"
            else:
                key = _model_key(name)
                assert key is not None, f"no model for route {name} ({k})"
                values[k] = objects[key] if key in objects else _any_row(key)
        url = reverse(name, kwargs=values) if values else reverse(name)
        out.setdefault(url, name)
    return sorted((name, url) for url, name in out.items())


@pytest.fixture
def world(stored: models.ClusterSnapshot, staff: Any, viewer: Any) -> dict[str, object]:
    """One row of every kind a route can point at, keyed by model label."""
    partition = stored.partition
    change = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 4000}, user=staff, snapshot=stored
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=stored,
        request={"queue": "root.a", "new_max": {"vcore": 4000}},
        user=staff,
        enqueue=False,
    )
    services.execute_run(run.pk)
    alert = services.raise_alert(models.Alert.Kind.ENGINE, "an alert", partition=partition)
    source = ClusterSource.objects.create(
        name="live", base_url="http://127.0.0.1:9", partition="default", token="t0ken-value"
    )
    link = SourceSnapshot.objects.create(
        source=source, snapshot=stored, fingerprint="f" * 64, fetched_at=datetime.now(tz=UTC)
    )
    group = Group.objects.create(name="operators")
    token = Token.objects.create(user=viewer)
    return {
        "dashboard.partition": partition.pk,
        "dashboard.configversion": services.latest_config(partition).pk,  # type: ignore[union-attr]
        "dashboard.clustersnapshot": stored.pk,
        "dashboard.quotachange": change.pk,
        "dashboard.preemptionrun": run.pk,
        "dashboard.alert": alert.pk,
        "sources.clustersource": source.pk,
        "sources.sourcesnapshot": link.pk,
        "auth.user": viewer.pk,
        "auth.group": group.pk,
        "authtoken.tokenproxy": token.pk,
    }


def db_fingerprint() -> str:
    """A digest of every row of every model (catches updates that keep the counts)."""
    digest = hashlib.sha256()
    for model in apps.get_models(include_auto_created=True):
        if not model._meta.managed or model._meta.proxy:
            continue
        digest.update(model._meta.label.encode())
        for row in model._default_manager.order_by("pk").values_list():
            digest.update(repr(row).encode())
    return digest.hexdigest()


def _is_refusal(response: Any) -> bool:
    if response.status_code in (401, 403, 405):
        return True
    return response.status_code == 302 and "login" in response.get("Location", "")


@contextmanager
def rows_unchanged(problems: list[str]) -> Iterator[None]:
    """Add a problem if any row of any model differs after the block (a write the
    per-request capture could not see, e.g. from another connection)."""
    before = db_fingerprint()
    yield
    if db_fingerprint() != before:
        problems.append("rows changed during the walk")


def _send(client: Client, method: str, url: str) -> tuple[Any, list[str]]:
    """One unsafe request; returns the response and the writing statements it sent."""
    with captured_writes() as writes:
        response = getattr(client, method)(url, data={}, content_type="application/json")
    return response, writes


def _try_every_write(client: Client, urls: list[tuple[str, str]]) -> tuple[list[str], Counter[int]]:
    """Send every unsafe method to every route; returns the problems and the statuses seen."""
    problems: list[str] = []
    seen: Counter[int] = Counter()
    with rows_unchanged(problems):
        for name, url in urls:
            for method in UNSAFE:
                response, writes = _send(client, method, url)
                seen[response.status_code] += 1
                if not _is_refusal(response) or writes:
                    problems.append(
                        f"{method.upper()} {url} ({name}): {response.status_code}, "
                        f"{f'wrote: {writes}' if writes else 'wrote nothing'}"
                    )
    return problems, seen


# --------------------------------------------------------------------------- settings


def _production_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS") and not k.startswith("PYTEST")
    }
    env.update(
        {
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "dashboard.example.org",
            "CSRF_TRUSTED_ORIGINS": "https://dashboard.example.org",
        }
    )
    env.update(extra)
    return env


@pytest.mark.subprocess
def test_check_deploy_passes_under_production_settings() -> None:
    """`manage.py check --deploy` reports nothing (not even a warning) with production values."""
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(f"[figures] check --deploy: exit {proc.returncode}: {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.subprocess
def test_production_settings_are_hardened() -> None:
    """With DEBUG off: HTTPS-only cookies, HSTS, SSL redirect, no debug pages."""
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: getattr(s, k) for k in ["
        "'DEBUG', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', "
        "'SECURE_HSTS_SECONDS', 'SESSION_COOKIE_HTTPONLY', 'X_FRAME_OPTIONS', "
        "'SECURE_CONTENT_TYPE_NOSNIFF']}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**_production_env(), "DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    values = json.loads(proc.stdout.strip().splitlines()[-1])
    assert values == {
        "DEBUG": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": values["SECURE_HSTS_SECONDS"],
        "SESSION_COOKIE_HTTPONLY": True,
        "X_FRAME_OPTIONS": "DENY",
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
    }
    assert values["SECURE_HSTS_SECONDS"] >= 31536000


# --------------------------------------------------------------------------- permissions


def test_every_route_is_enumerated(world: dict[str, object]) -> None:
    """The walk reaches the admin, the API (router and sources) and the pages."""
    urls = concrete_urls(world)
    names = {n for n, _ in urls}
    print(f"[figures] routes walked: {len(urls)}")
    assert {"quotachange-list", "clustersource-detail", "import", "admin:index"} <= names
    assert {"change_cancel", "alert_ack_all", "snapshot-compare", "quota-change-config"} <= names


def test_anonymous_writes_are_refused_everywhere(world: dict[str, object]) -> None:
    """No route accepts an unauthenticated write, and no row changes."""
    urls = [(n, u) for n, u in concrete_urls(world) if n not in AUTH_ENDPOINTS]
    problems, seen = _try_every_write(APIClient(), urls)
    print(f"[figures] anonymous writes: {sum(seen.values())} requests, statuses {dict(seen)}")
    assert problems == [], "\n".join(problems)


def test_non_staff_writes_are_refused_everywhere(world: dict[str, object], viewer: Any) -> None:
    """A signed-in viewer (session) is refused every write on every route; no row changes."""
    client = APIClient()
    client.force_login(viewer)
    urls = [(n, u) for n, u in concrete_urls(world) if n not in AUTH_ENDPOINTS]
    problems, seen = _try_every_write(client, urls)
    print(f"[figures] viewer writes: {sum(seen.values())} requests, statuses {dict(seen)}")
    assert problems == [], "\n".join(problems)


def test_non_staff_token_and_basic_writes_are_refused(
    world: dict[str, object], viewer: Any
) -> None:
    """The same viewer with a token or HTTP Basic credentials (no CSRF involved) is refused."""
    token = Token.objects.get(user=viewer).key
    api_urls = [(n, u) for n, u in concrete_urls(world) if u.startswith("/api/")]
    api_urls = [(n, u) for n, u in api_urls if n not in AUTH_ENDPOINTS]
    token_client = APIClient()
    token_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    problems, seen = _try_every_write(token_client, api_urls)
    print(f"[figures] viewer token writes: {sum(seen.values())} requests, statuses {dict(seen)}")
    assert problems == []
    assert seen.keys() <= {403, 405}, "a valid token must be recognised (403, not 401)"


def test_staff_can_write_what_viewers_cannot(world: dict[str, object], staff: Any) -> None:
    """The refusals above are permissions, not broken endpoints: staff get through."""
    client = APIClient()
    client.force_login(staff)
    body = {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 5000}}
    assert client.post("/api/quota-changes/", body, format="json").status_code == 201
    ack = client.post(f"/api/alerts/{world['dashboard.alert']}/acknowledge/")
    assert ack.status_code == 200


def test_a_viewer_reads_every_api_route_as_staff_do(
    world: dict[str, object], staff: Any, viewer: Any
) -> None:
    """Reads are not a staff user's privilege: on every API route open to every signed-in
    user, the viewer's token gets the staff user's answer (status and body); on the
    others (the alert routes and deliveries) a 403. (The API fuzzing therefore sends the
    viewer only the writes and those reads.)"""
    urls = [u for n, u in concrete_urls(world) if u.startswith("/api/") and n not in AUTH_ENDPOINTS]
    clients = {}
    for who, user in (("staff", staff), ("viewer", viewer)):
        client = APIClient()
        token = Token.objects.get_or_create(user=user)[0].key
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        clients[who] = client
    problems, statuses = [], Counter[int]()
    staff_only = []
    for url in urls:
        answers = []
        for who in ("staff", "viewer"):
            response = clients[who].get(url, HTTP_ACCEPT="application/json")
            answers.append((response.status_code, _body(response)))
        statuses[answers[0][0]] += 1
        if not reads_open_to_viewers(url):
            staff_only.append(url)
            if answers[1][0] != 403:
                problems.append(f"{url}: a viewer's read answered {answers[1][0]}, not 403")
        elif answers[0] != answers[1]:
            problems.append(f"{url}: staff {answers[0][0]}, viewer {answers[1][0]}")
    print(
        f"[figures] API reads compared: {len(urls)} routes ({len(staff_only)} staff only), "
        f"staff statuses {dict(statuses)}"
    )
    assert problems == [], "\n".join(problems)
    assert staff_only  # the alert routes
    assert statuses[200] >= len(urls) // 2, statuses  # the routes were read, not refused


# --------------------------------------------------------------------------- CSRF


def test_session_writes_without_csrf_token_are_refused_everywhere(
    world: dict[str, object], staff: Any
) -> None:
    """A staff session (cookie only, as a forged cross-site form would send) is refused
    on every route and method, pages and API alike, including sign-in and sign-out."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    problems: list[str] = []
    seen: Counter[int] = Counter()
    with rows_unchanged(problems):
        for name, url in concrete_urls(world):
            for method in UNSAFE:
                response, writes = _send(client, method, url)
                seen[response.status_code] += 1
                if response.status_code != 403 or writes:
                    problems.append(
                        f"{method.upper()} {url} ({name}): {response.status_code}, {writes}"
                    )
    print(f"[figures] CSRF-less staff writes: {sum(seen.values())} requests, {dict(seen)}")
    assert problems == []


def test_session_writes_with_csrf_token_go_through(world: dict[str, object], staff: Any) -> None:
    """With the token from the page (cookie + header / form field), the same writes work."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    client.get("/alerts/")
    csrf = client.cookies["csrftoken"].value
    api = client.post(
        "/api/quota-changes/",
        {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 5000}},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert api.status_code == 201, api.content
    page = client.post("/alerts/ack-all/", {"csrfmiddlewaretoken": csrf})
    assert page.status_code == 302
    assert not models.Alert.objects.filter(acknowledged_at__isnull=True).exists()


# --------------------------------------------------------------------------- login rate limit

WRONG = "not-the-password"


def _login_page(client: Client, username: str, password: str) -> Any:
    return client.post("/login/", {"username": username, "password": password})


def test_login_page_is_rate_limited(staff: Any, viewer: Any) -> None:
    """After 5 wrong passwords for one user from one address, even the right one is refused
    (429, no session); another user from the same address still signs in."""

    client = Client()
    statuses = [_login_page(client, staff.username, WRONG).status_code for _ in range(5)]
    locked = _login_page(client, staff.username, PASSWORD)
    print(f"[figures] /login/ wrong x5: {statuses}, then right password: {locked.status_code}")
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    other = Client()
    assert _login_page(other, viewer.username, PASSWORD).status_code == 302
    assert "_auth_user_id" in other.session


def test_api_token_endpoint_is_rate_limited(staff: Any) -> None:

    client = APIClient()
    body = {"username": staff.username, "password": WRONG}
    statuses = [client.post("/api/auth/token/", body).status_code for _ in range(5)]
    locked = client.post("/api/auth/token/", {"username": staff.username, "password": PASSWORD})
    print(f"[figures] /api/auth/token/ wrong x5: {statuses}, then right: {locked.status_code}")
    assert statuses == [400] * 5
    assert locked.status_code == 429
    assert "token" not in locked.content.decode()


def test_http_basic_is_rate_limited(staff: Any) -> None:
    import base64

    def basic(password: str) -> int:
        raw = base64.b64encode(f"{staff.username}:{password}".encode()).decode()
        return int(
            APIClient().get("/api/partitions/", HTTP_AUTHORIZATION=f"Basic {raw}").status_code
        )

    statuses = [basic(WRONG) for _ in range(5)]
    locked = basic(PASSWORD)
    print(f"[figures] HTTP Basic wrong x5: {statuses}, then right: {locked}")
    assert set(statuses) <= {401, 403}
    assert locked in (401, 403, 429), "the right password is refused while locked out"


# --------------------------------------------------------------------------- secrets


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


# The loggers LOG_LEVEL=DEBUG opens up (the product's and its frameworks'); the others
# keep their configured level, as in production.
VERBOSE = ("dashboard", "celery", "django")


@contextmanager
def every_log_line() -> Iterator[list[str]]:
    """Every record the configured logging would emit with LOG_LEVEL=DEBUG, from every
    logger, including those that do not propagate to the root logger."""
    collector = _LogCollector()
    loggers = [logging.getLogger()] + [
        logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
    ]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(collector)
        if lg.name.split(".")[0] in VERBOSE:
            lg.setLevel(logging.DEBUG)
    try:
        yield collector.lines
    finally:
        for lg, level in saved:
            lg.removeHandler(collector)
            lg.setLevel(level)


class _Scheduler(BaseHTTPRequestHandler):
    """A YuniKorn REST stand-in on loopback that wants a bearer token.

    ``mode``: "ok" serves the fixture files; "redirect" answers 302 to a URL holding
    the token; "reason" answers 401 with the token as its reason phrase (a hostile
    or broken proxy echoing credentials back).
    """

    token = ""
    mode = "ok"
    files: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        if self.mode == "redirect":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:1/login?echo={self.token}")
            self.end_headers()
            return
        if self.mode == "reason" or self.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_response(401, f"bad token {self.headers.get('Authorization')}")
            self.end_headers()
            return
        for name, path in rest_endpoints("default"):
            if self.path == path:
                body = self.files[name]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
        self.send_response(404)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # the test reads our logs only
        return


@contextmanager
def scheduler(token: str) -> Iterator[tuple[type[_Scheduler], str]]:
    rest = Path(django_settings.DASHBOARD_FIXTURES_DIR) / "rest"
    handler = type(
        "Scheduler",
        (_Scheduler,),
        {
            "token": token,
            "mode": "ok",
            "files": {n: (rest / n).read_bytes() for n, _ in rest_endpoints("default")},
        },
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handler, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _body(response: Any) -> bytes:
    """The body of a test client's answer, streamed or not."""
    return b"".join(response) if response.streaming else bytes(response.content)


def _crawl(client: Client, urls: list[tuple[str, str]], accept: str) -> Iterator[tuple[str, str]]:
    """(url, status line + headers + body) of a GET of every route."""
    for _, url in urls:
        response = client.get(url, HTTP_ACCEPT=accept)
        body = _body(response)
        headers = "\n".join(f"{k}: {v}" for k, v in response.items())
        yield url, f"{response.status_code}\n{headers}\n{body.decode('utf-8', 'replace')}"


def test_secrets_never_reach_pages_api_or_logs(
    settings: Any, world: dict[str, object], staff: Any, viewer: Any
) -> None:
    """SECRET_KEY and a source's bearer token stay out of every page, API answer, admin
    page and log line: through a successful poll, hostile answers that echo the token,
    and a full GET crawl as staff and as viewer (JSON and browsable HTML)."""
    settings.SECRET_KEY = "reliability-" + secrets.token_urlsafe(40)
    settings.SOURCES_HTTP_RETRIES = 0
    settings.SOURCES_HTTP_TIMEOUT = 5.0
    token = "tok-" + secrets.token_urlsafe(24)
    staff_client, viewer_client = Client(), Client()
    staff_client.force_login(staff)
    viewer_client.force_login(viewer)
    ClusterSource.objects.all().delete()
    leaks: list[str] = []
    with every_log_line() as logs, scheduler(token) as (handler, base_url):
        created = staff_client.post(
            "/api/sources/",
            {"name": "live", "base_url": base_url, "partition": "default", "token": token},
            content_type="application/json",
        )
        assert created.status_code == 201, created.content
        source_id = created.json()["id"]
        ok = source_services.poll_source(source_id, force=True)
        assert ok.status in ("stored", "unchanged"), ok
        for mode in ("redirect", "reason"):
            handler.mode = mode
            failed = source_services.poll_source(source_id, force=True)
            assert failed.status == "failed", failed
        source = ClusterSource.objects.get(pk=source_id)
        assert source.last_error, "the hostile answers were recorded as errors"
        world = {**world, "sources.clustersource": source_id}
        urls = concrete_urls(world)
        pages = 0
        for who, client in (("staff", staff_client), ("viewer", viewer_client)):
            for accept in ("application/json", "text/html"):
                for url, text in _crawl(client, urls, accept):
                    pages += 1
                    for secret in (token, settings.SECRET_KEY):
                        if secret in text:
                            leaks.append(f"{who} GET {url} ({accept})")
        log_text = "\n".join(logs)
    print(f"[figures] secrets crawl: {pages} answers, {len(logs)} log records")
    assert leaks == []
    assert token not in log_text
    assert settings.SECRET_KEY not in log_text
    assert token not in source.last_error


# --------------------------------------------------------------------------- escaping

XSS = {
    "queue": '<script>alert("xss-queue")</script>',
    "node": '<img src=x onerror=alert("xss-node")>',
    "key": '"><svg onload=alert("xss-key")>',
    "app": "<iframe src=javascript:alert('xss-app')>",
    "file": '<img src=x onerror=alert("xss-file")>.json',
    "source": '<b onmouseover=alert("xss-source")>s</b>',
}
RAW = [
    "<script>alert(",
    "<img src=x onerror",
    "<svg onload",
    "<iframe src=javascript",
    "<b onmouseover",
]
JSON_SCRIPT = re.compile(r'<script id="([^"]+)" type="application/json">(.*?)</script>', re.S)
# figure members that Plotly never shows as text (identifiers of the tree)
NOT_SHOWN = {"ids", "parents", "uid", "meta"}


def _hostile_snapshot(staff: Any) -> models.ClusterSnapshot:
    doc = scenario()
    doc["queues"]["children"].append(
        {"name": XSS["queue"], "guaranteed": {"vcore": 1000}, "quota_preemption_delay": 30}
    )
    doc["nodes"].append({"id": XSS["node"], "capacity": {"vcore": 4000}})
    doc["allocations"].append(
        {
            "key": XSS["key"],
            "app": XSS["app"],
            "queue": f"root.{XSS['queue']}",
            "node": XSS["node"],
            "resources": {"vcore": 3000},
            "created": doc["now"] - 10,
        }
    )
    doc["request"]["asks"].append(
        {"key": XSS["key"] + "-ask", "queue": f"root.{XSS['queue']}", "resources": {"vcore": 1}}
    )
    return services.import_snapshot({"scenario.json": json.dumps(doc).encode()}, user=staff)


def _figure_strings(node: object, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        yield key, node
    elif isinstance(node, dict):
        for k, v in node.items():
            if k not in NOT_SHOWN:
                yield from _figure_strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _figure_strings(v, key)


def test_user_text_is_escaped_in_every_page_api_html_and_plotly_figure(
    world: dict[str, object], staff: Any
) -> None:
    """Queue, node, allocation, application, file and source names carrying HTML and script
    reach pages, hover texts, alerts and the browsable API only as text."""
    snapshot = _hostile_snapshot(staff)
    queue = f"root.{XSS['queue']}"
    partition = snapshot.partition
    change = services.schedule_quota_change(
        partition, queue, new_max={"vcore": 1500}, user=staff, snapshot=snapshot
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snapshot,
        request={"queue": queue, "new_max": {"vcore": 1500}},
        user=staff,
        enqueue=False,
    )
    services.execute_run(run.pk)
    preempt = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        snapshot=snapshot,
        request={"ask_key": XSS["key"] + "-ask"},
        user=staff,
        enqueue=False,
    )
    services.execute_run(preempt.pk)
    with pytest.raises(services.ImportRejected):  # a refused upload: its name reaches the alerts
        services.import_snapshot({XSS["file"]: b"{not json"}, user=staff)
    ClusterSource.objects.filter(pk=int(str(world["sources.clustersource"]))).update(
        name=XSS["source"],
        status=ClusterSource.Status.FAILING,
        failing_since=datetime.now(tz=UTC),
        last_error=f"fetch /ws/v1/partitions: HTTP 500 {XSS['source']}",
    )
    services.raise_alert(models.Alert.Kind.ENGINE, f"alert about {XSS['queue']}", queue=queue)
    client = Client()
    client.force_login(staff)
    # an import warning naming an uploaded file: a state dump beside a REST answer whose file
    # name is hostile ("these files were ignored: <name>"), shown as a flash and in the feed
    rest = Path(django_settings.DASHBOARD_FIXTURES_DIR) / "rest"
    imported = client.post(
        "/import/",
        {
            "kind": "snapshot",
            "upload": [
                SimpleUploadedFile(
                    "fullstatedump.json", (rest / "fullstatedump.json").read_bytes()
                ),
                SimpleUploadedFile(XSS["file"], (rest / "partition_nodes.json").read_bytes()),
            ],
        },
        follow=True,
    )
    flash = imported.content.decode()
    assert imported.status_code == 200
    assert "these files were ignored" in flash, "the warning is shown"
    assert html.escape(XSS["file"], quote=False) in flash or html.escape(XSS["file"]) in flash
    assert [raw for raw in RAW if raw in flash] == []
    assert models.Alert.objects.filter(
        kind=models.Alert.Kind.IMPORT_WARNING, message__contains=XSS["file"]
    ).exists()

    objects = {
        **world,
        "dashboard.clustersnapshot": snapshot.pk,
        "dashboard.quotachange": change.pk,
        "dashboard.preemptionrun": run.pk,
    }
    scope: dict[str, str | int] = {
        "partition": partition.name,
        "snapshot": snapshot.pk,
        "queue": queue,
    }
    problems: list[str] = []
    figures = 0
    texts = 0
    urls = [
        *concrete_urls(objects),
        ("run", reverse("run", args=[preempt.pk])),
        ("victims", reverse("victims")),
        ("whatif", f"{reverse('whatif')}?run={preempt.pk}"),
    ]
    for name, url in urls:
        for accept in ("text/html", "application/json"):
            response = client.get(url, scope, HTTP_ACCEPT=accept)
            if response.streaming or "html" not in response.get("Content-Type", ""):
                continue
            body = response.content.decode("utf-8", "replace")
            texts += 1
            problems += [f"{name} {url}: raw {raw!r}" for raw in RAW if raw in body]
            for fig_id, blob in JSON_SCRIPT.findall(body):
                figures += 1
                for key, text in _figure_strings(json.loads(blob)):
                    problems += [
                        f"{name} {url}: figure {fig_id}.{key} holds raw {raw!r}"
                        for raw in RAW
                        if raw in text
                    ]
    print(f"[figures] escaping crawl: {texts} HTML answers, {figures} Plotly figures")
    assert figures >= 5, "the crawl reached the pages with figures"
    assert sorted(set(problems)) == []
