"""Django settings, read from the environment (django-environ) with safe local defaults.

Environments differ in values, not code.  The defaults need no server: SQLite
for the database and kombu's SQLAlchemy transport on SQLite for the Celery
broker, so ``./scripts/run`` works on a fresh machine.  Production sets
``DATABASE_URL`` (PostgreSQL), ``CELERY_BROKER_URL`` or ``REDIS_URL`` (Redis),
``SECRET_KEY``, ``ALLOWED_HOSTS`` and leaves ``DEBUG`` false, which turns on the
HTTPS-only cookie and HSTS settings that ``manage.py check --deploy`` asks for.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import django_stubs_ext
import environ

from dashboard import publicurl
from dashboard.access import oidc_env
from dashboard.clientaddr import parse_trusted_proxies

# Lets admin.ModelAdmin[Model] and friends be subscripted at run time (typing).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("DASHBOARD_VAR_DIR", default=str(BASE_DIR / "var")))

VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()

# The fallback key is only good for local runs and tests; `check --deploy` flags it.
SECRET_KEY: str = env.str("SECRET_KEY", default="dev-only-insecure-key-change-me")
# Earlier keys during a rotation: sessions and encrypted source tokens stay readable.
SECRET_KEY_FALLBACKS: list[str] = env.list("SECRET_KEY_FALLBACKS", default=[])
DEBUG: bool = env.bool("DEBUG", default=False)
# Behind a TLS-terminating proxy: the one variable (https://...) from which the host,
# the CSRF origin, the trusted proxy header, secure cookies and HSTS are derived.
DASHBOARD_PUBLIC_URL: str = env.str("DASHBOARD_PUBLIC_URL", default="")
_PUBLIC = publicurl.derived_settings(DASHBOARD_PUBLIC_URL)
ALLOWED_HOSTS: list[str] = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])
ALLOWED_HOSTS += [h for h in _PUBLIC.get("ALLOWED_HOSTS", []) if h not in ALLOWED_HOSTS]
CSRF_TRUSTED_ORIGINS: list[str] = env.list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_TRUSTED_ORIGINS += _PUBLIC.get("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "axes",
    "dashboard",
    "dashboard.pages",
    "dashboard.sources",  # live cluster sources
]

MIDDLEWARE = [
    # /livez and /readyz: before the host check, the HTTPS redirect and sign-in
    "dashboard.probes.ProbeMiddleware",
    # REMOTE_ADDR becomes the client's address behind TRUSTED_PROXIES (throttle, logs)
    "dashboard.clientaddr.TrustedProxyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "dashboard.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # users the queue ACLs restrict reach only their queues' pages (dashboard/access)
    "dashboard.access.pages.TenantPageMiddleware",
    # bodies over the limit refused from Content-Length, before CSRF or any parser reads them
    "dashboard.bodylimit.BodyLimitMiddleware",
    # a NUL byte in a query string or form field: 400 naming the field (not a 500)
    "dashboard.nulbytes.NulByteGuardMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.pages.middleware.PageNotFoundMiddleware",
    # last, as django-axes asks: answers a locked-out login with 429
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.pages.context_processors.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
# Persistent connections: opening a PostgreSQL connection per request (a server
# process forked, authentication, session set-up) cost more CPU than most of our
# reads themselves; under the load test it doubled the p99. ?conn_max_age=N in
# DATABASE_URL or DB_CONN_MAX_AGE (0 = close after each request) overrides it; a
# connection that broke is replaced before it is used (health checks).
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share one file: wait for locks instead of failing,
    # take the write lock up front (no lock-upgrade deadlocks), and let readers
    # run beside the writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # pytest-django names the test database after this; a file (not :memory:)
    # lets a real worker process reach the same database in integration tests.
    # One file per test process: parallel runs (and stale WAL files of a killed
    # run) never meet.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_db_{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Login rate limiting (django-axes): failed logins are counted in the database per
# username and address, so the limit holds across gunicorn workers; it covers the
# login pages, /api/auth/token/ and HTTP Basic (all go through authenticate()).
# Failures are also limited per address, per username from any address and overall
# (dashboard.signin.LoginThrottleHandler); a username or password no user can have
# (too long, NUL, lone surrogate) is refused before the database sees it.
AUTHENTICATION_BACKENDS = [
    "dashboard.signin.MalformedCredentialsBackend",
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # single sign-on: nothing unless OIDC_ISSUER is set (dashboard.access.oidc)
    "dashboard.access.oidc.Backend",
]
AXES_FAILURE_LIMIT: int = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_HANDLER = "dashboard.signin.LoginThrottleHandler"
AXES_USERNAME_CALLABLE = "dashboard.signin.axes_username"
# the client's address as dashboard.clientaddr settled it (behind TRUSTED_PROXIES), never
# a forwarded header axes would believe on its own
AXES_CLIENT_IP_CALLABLE = "dashboard.clientaddr.request_client_address"
# Proxies (the ingress) whose X-Forwarded-For is believed: comma-separated addresses or
# CIDRs; the client is the right-most forwarded address not among them.
TRUSTED_PROXIES: list[str] = [
    str(network) for network in parse_trusted_proxies(env.list("TRUSTED_PROXIES", default=[]))
]
LOGIN_ADDRESS_FAILURE_LIMIT: int = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
LOGIN_USERNAME_FAILURE_LIMIT: int = env.int("LOGIN_USERNAME_FAILURE_LIMIT", default=10)
LOGIN_GLOBAL_FAILURE_LIMIT: int = env.int("LOGIN_GLOBAL_FAILURE_LIMIT", default=200)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True
TIME_ZONE = "UTC"

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request without it
STATICFILES_DIRS = [p for p in [BASE_DIR / "static"] if p.is_dir()]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Single sign-on (OpenID Connect; dashboard.access.oidc; docs/operations/sign-in.md) --
# Without OIDC_ISSUER only the local accounts sign in.
# (mozilla-django-oidc's own settings are derived from it: dashboard.access.oidc_env)
OIDC: oidc_env.OidcSettings | None = oidc_env.oidc_from_env(env)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# --- Uploads -----------------------------------------------------------------
# One number bounds every upload (config YAML, snapshot JSON); the API answers 413
# naming it, and the importers cap their input before parsing as well.
DASHBOARD_MAX_UPLOAD_BYTES: int = env.int("DASHBOARD_MAX_UPLOAD_BYTES", default=10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = DASHBOARD_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = DASHBOARD_MAX_UPLOAD_BYTES
DATA_UPLOAD_MAX_NUMBER_FILES = 50
# Whole request bodies (dashboard.bodylimit): refused from their Content-Length, unread;
# requests not signed in may send a login form's worth only.
DASHBOARD_MAX_BODY_BYTES: int = env.int(
    "DASHBOARD_MAX_BODY_BYTES", default=8 * DASHBOARD_MAX_UPLOAD_BYTES + 1024 * 1024
)
DASHBOARD_ANONYMOUS_MAX_BODY_BYTES: int = env.int(
    "DASHBOARD_ANONYMOUS_MAX_BODY_BYTES", default=16 * 1024
)
# The most queues an uploaded snapshot may hold (counted before any is built): a few MB
# of JSON can describe far more queues than a web request can import (413 above it).
DASHBOARD_MAX_SNAPSHOT_QUEUES: int = env.int("DASHBOARD_MAX_SNAPSHOT_QUEUES", default=5000)
# Config uploads larger than this are imported by a Celery worker (an import job with
# its progress, answered 202 at once), so no upload meets the web server's timeout.
DASHBOARD_IMPORT_ASYNC_BYTES: int = env.int("DASHBOARD_IMPORT_ASYNC_BYTES", default=256 * 1024)

# --- Production hardening (keyed on DASHBOARD_PUBLIC_URL, else on DEBUG; each
# overridable by its own variable) -----------------------------------------------------
_SECURE = _PUBLIC.get("SESSION_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT: bool = env.bool("SECURE_SSL_REDIRECT", default=_SECURE)
SESSION_COOKIE_SECURE: bool = env.bool("SESSION_COOKIE_SECURE", default=_SECURE)
CSRF_COOKIE_SECURE: bool = env.bool("CSRF_COOKIE_SECURE", default=_SECURE)
SECURE_HSTS_SECONDS: int = env.int(
    "SECURE_HSTS_SECONDS", default=publicurl.HSTS_SECONDS if _SECURE else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS: bool = _SECURE
SECURE_HSTS_PRELOAD: bool = _SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
if env.bool("SECURE_PROXY_SSL_HEADER", default=bool(_PUBLIC.get("SECURE_PROXY_SSL_HEADER"))):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- REST framework -----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    # staff: everything; others: what the queue ACLs grant (dashboard/access/api.py)
    "DEFAULT_PERMISSION_CLASSES": ["dashboard.access.api.QueueAclPermission"],
    # DRF's JSON parser lets RecursionError (deeply nested bodies) through as a 500;
    # ours also refuse NUL bytes (dashboard.nulbytes)
    "DEFAULT_PARSER_CLASSES": [
        "dashboard.api.parsers.JSONParser",
        "dashboard.api.parsers.FormParser",
        "dashboard.api.parsers.MultiPartParser",
    ],
    # page / page_size / ordering that are junk are a 400 naming them, not ignored
    "DEFAULT_PAGINATION_CLASS": "dashboard.api.filters.Pagination",
    # DRF's browsable API with the page's language declared (its frame: a template
    # override, templates/rest_framework/api.html)
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "dashboard.api.renderers.BrowsableAPIRenderer",
    ],
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "dashboard.api.filters.OrderingFilter",
        "dashboard.access.api.QueueAclFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "dashboard.api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "YuniKorn preemption dashboard API",
    "DESCRIPTION": (
        "Queue configs, cluster snapshots, what-if preemption, scheduled quota "
        "changes, preemption runs and alerts."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # the schema and its docs pages are for signed-in users, like the API they describe
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    # no deep links: with them each operation's path is a link inside the button that
    # opens it (axe nested-interactive); the page's frame: templates/drf_spectacular/
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # the error answers (400/401/403/404/409/413/429) every operation documents
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "dashboard.api.schema.document_errors",
    ],
    "ENUM_NAME_OVERRIDES": {
        "RunKindEnum": "dashboard.models.PreemptionRun.Kind",
        "AlertKindEnum": "dashboard.models.Alert.Kind",
        "AlertLevelEnum": "dashboard.models.Alert.Level",
        "RunStatusEnum": "dashboard.models.PreemptionRun.Status",
    },
}

# --- Celery -------------------------------------------------------------------
REDIS_URL: str | None = env.str("REDIS_URL", default=None)
CELERY_BROKER_URL: str = env.str(
    "CELERY_BROKER_URL",
    default=REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'broker.sqlite3'}",
)
CELERY_RESULT_BACKEND: str | None = env.str("CELERY_RESULT_BACKEND", default=None)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis re-delivers an unacknowledged task after this; the run lease lets the
# redelivery take over an abandoned run.  (The SQLAlchemy transport passes its
# options to create_engine, so it gets none.)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)}
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else {}
)
# Seconds the worker sleeps between empty polls of the embedded (SQLAlchemy) broker:
# kombu's 1 s default is most of a what-if's wait there; each poll is one indexed
# SELECT on the broker's SQLite file (dashboard/broker.py).
DASHBOARD_BROKER_POLL_SECONDS: float = env.float("DASHBOARD_BROKER_POLL_SECONDS", default=0.05)
CELERY_BEAT_SCHEDULE_FILENAME: str = env.str(
    "CELERY_BEAT_SCHEDULE_FILENAME", default=str(VAR_DIR / "celerybeat-schedule")
)
CELERY_TASK_ALWAYS_EAGER: bool = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)

# --- The dashboard's own knobs --------------------------------------------------
# How often beat runs the quota-change / stale-run sweep.
DASHBOARD_SWEEP_SECONDS: float = env.float("DASHBOARD_SWEEP_SECONDS", default=5.0)
# A claimed run whose worker vanished may be taken over once its lease expires.
DASHBOARD_RUN_LEASE_SECONDS: float = env.float("DASHBOARD_RUN_LEASE_SECONDS", default=600.0)
# A pending run nobody picked up (message lost with the broker) is re-sent after this.
DASHBOARD_RUN_REQUEUE_SECONDS: float = env.float("DASHBOARD_RUN_REQUEUE_SECONDS", default=120.0)
# Warm-up tasks sent when a snapshot is stored (dashboard.warm_snapshot builds its
# engine state in the worker process that takes it): one per worker process
# (scripts/run starts --concurrency=2), 0 to send none.
DASHBOARD_WARM_UP_TASKS: int = env.int("DASHBOARD_WARM_UP_TASKS", default=2)
# Seconds the what-if page's POST waits for its run before redirecting (a finished
# run is shown at once; an unfinished one is then long-polled by the page).
DASHBOARD_WHATIF_WAIT_SECONDS: float = env.float("DASHBOARD_WHATIF_WAIT_SECONDS", default=1.5)
# Whether the what-if page builds the snapshot's engine state in its web process, in a
# background thread, while the form is filled (the answer's victim reasons need it).
DASHBOARD_WARM_WEB: bool = env.bool("DASHBOARD_WARM_WEB", default=True)
# Test-only hook: seconds a claimed run sleeps before the engine runs (integration tests).
DASHBOARD_TEST_TASK_DELAY: float = env.float("DASHBOARD_TEST_TASK_DELAY", default=0.0)
DASHBOARD_FIXTURES_DIR = Path(
    env.str(
        "DASHBOARD_FIXTURES_DIR",
        default=str(BASE_DIR.parent / "shared" / "fixtures" / "yunikorn"),
    )
)

# --- Cluster sources (dashboard.sources) -----------------------------------------
# Beat ticks often; each source's own poll interval is checked in the database.
SOURCES_BEAT_SECONDS: float = env.float("SOURCES_BEAT_SECONDS", default=10.0)
# Per request timeout (s); retries after the first try, waiting backoff * 2**i
# seconds (at most SOURCES_HTTP_BACKOFF_MAX) between tries.
SOURCES_HTTP_TIMEOUT: float = env.float("SOURCES_HTTP_TIMEOUT", default=10.0)
SOURCES_HTTP_RETRIES: int = env.int("SOURCES_HTTP_RETRIES", default=2)
SOURCES_HTTP_BACKOFF: float = env.float("SOURCES_HTTP_BACKOFF", default=0.5)
SOURCES_HTTP_BACKOFF_MAX: float = env.float("SOURCES_HTTP_BACKOFF_MAX", default=8.0)
# The largest answer read from a scheduler (per endpoint). Separate from the upload
# limit: a big cluster's applications answer is far larger than any hand upload.
SOURCES_MAX_ANSWER_BYTES: int = env.int("SOURCES_MAX_ANSWER_BYTES", default=64 * 1024 * 1024)
# A source following the event stream reads it for at most this many seconds per cycle
# (unset: its poll interval; always at most a third of the poll's lease).
SOURCES_STREAM_WINDOW_SECONDS: float | None = (
    env.float("SOURCES_STREAM_WINDOW_SECONDS")
    if "SOURCES_STREAM_WINDOW_SECONDS" in os.environ
    else None
)
# Address policy of the sources (dashboard/sources/addresses.py), checked when a source
# is saved (IP literals, ports) and after DNS at every request of every poll.
# Denied networks (CIDR list; unset: addresses.DEFAULT_DENIED_NETWORKS, i.e. link-local
# and cloud metadata, unspecified, multicast, broadcast); allowed networks (empty = any
# address not denied); denied ports (unset: the dashboard's own database, Redis/broker
# and web ports).
SOURCES_DENIED_NETWORKS: list[str] | None = (
    env.list("SOURCES_DENIED_NETWORKS") if "SOURCES_DENIED_NETWORKS" in os.environ else None
)
SOURCES_ALLOWED_NETWORKS: list[str] = env.list("SOURCES_ALLOWED_NETWORKS", default=[])
SOURCES_DENIED_PORTS: list[int] | None = (
    env.list("SOURCES_DENIED_PORTS", cast=int) if "SOURCES_DENIED_PORTS" in os.environ else None
)
# The web server's ports (scripts/run: PORT), refused as source ports.
DASHBOARD_WEB_PORTS: list[int] = env.list(
    "DASHBOARD_WEB_PORTS", cast=int, default=[int(os.environ.get("PORT", "8000"))]
)
# Retention of polled snapshots: all of the last N hours, then hourly up to N days,
# then daily; snapshots that runs or quota changes refer to are always kept.
SOURCES_RETENTION_KEEP_ALL_HOURS: float = env.float(
    "SOURCES_RETENTION_KEEP_ALL_HOURS", default=24.0
)
SOURCES_RETENTION_HOURLY_DAYS: float = env.float("SOURCES_RETENTION_HOURLY_DAYS", default=7.0)
SOURCES_PRUNE_SECONDS: float = env.float("SOURCES_PRUNE_SECONDS", default=3600.0)
# One poll's overall deadline (all requests, retries and reads; dashboard/sources/deadline.py).
SOURCES_POLL_DEADLINE_SECONDS: float = env.float("SOURCES_POLL_DEADLINE_SECONDS", default=120.0)
# The Celery queue polls go to (a worker started with -Q <it>); empty: the default queue.
SOURCES_POLL_QUEUE: str = env.str("SOURCES_POLL_QUEUE", default="")
# Source affinity (dashboard/sources/affinity.py): each worker consuming the poll queue
# also consumes a queue of its own, and the beat sends each source's polls to one live
# poller, so its last read (the parse memo) is always in that process. A poller not seen
# for SOURCES_POLLER_TTL_SECONDS is dead: its sources go to the others.
SOURCES_POLL_AFFINITY: bool = env.bool("SOURCES_POLL_AFFINITY", default=True)
SOURCES_POLLER_TTL_SECONDS: float = env.float("SOURCES_POLLER_TTL_SECONDS", default=20.0)
# A snapshot stored by a poll is warmed in the workers (DASHBOARD_WARM_UP_TASKS) only when
# its source polls every this many seconds or less often: the snapshot of a source polled
# more often is replaced before anyone is likely to ask; the what-if page warms it when shown.
SOURCES_WARM_UP_MIN_INTERVAL: float = env.float("SOURCES_WARM_UP_MIN_INTERVAL", default=60.0)
CELERY_TASK_ROUTES: dict[str, dict[str, str]] = (
    {
        name: {"queue": SOURCES_POLL_QUEUE}
        for name in ("dashboard.poll_cluster_sources", "dashboard.poll_cluster_source")
    }
    if SOURCES_POLL_QUEUE
    else {}
)
CELERY_BEAT_SCHEDULE = {
    "poll cluster sources": {
        "task": "dashboard.poll_cluster_sources",
        "schedule": SOURCES_BEAT_SECONDS,
    },
}
if SOURCES_PRUNE_SECONDS > 0:  # 0: pruned by another scheduler (the manifests' CronJob)
    CELERY_BEAT_SCHEDULE["prune polled snapshots"] = {
        "task": "dashboard.prune_snapshots",
        "schedule": SOURCES_PRUNE_SECONDS,
    }
CELERY_BEAT_SCHEDULE["sweep alert deliveries"] = {
    "task": "dashboard.sweep_alert_deliveries",
    "schedule": 60.0,
}

# --- Alert routing (dashboard.alerting; docs/operations/alert-routing.md) ---------
# Tries per delivery, and the wait after the n-th failed try: base * 2**(n-1), capped.
ALERT_DELIVERY_MAX_ATTEMPTS: int = env.int("ALERT_DELIVERY_MAX_ATTEMPTS", default=6)
ALERT_DELIVERY_BACKOFF_SECONDS: float = env.float("ALERT_DELIVERY_BACKOFF_SECONDS", default=10.0)
ALERT_DELIVERY_BACKOFF_MAX_SECONDS: float = env.float(
    "ALERT_DELIVERY_BACKOFF_MAX_SECONDS", default=600.0
)
# Seconds to connect to a webhook/Slack target, and per read or write after that; an
# e-mail's SMTP conversation, per operation. A receiver that never answers holds one
# delivery worker this long, never a what-if's or a firing's worker (their own queue).
ALERT_CONNECT_TIMEOUT: float = env.float("ALERT_CONNECT_TIMEOUT", default=3.0)
ALERT_HTTP_TIMEOUT: float = env.float("ALERT_HTTP_TIMEOUT", default=5.0)
ALERT_EMAIL_TIMEOUT: float = env.float("ALERT_EMAIL_TIMEOUT", default=10.0)
# A route's held deliveries (its rate limit, or an earlier alert of the same cause) go
# out in one digest once the oldest has waited this long (dashboard/alerting/noise.py).
ALERT_DIGEST_SECONDS: float = env.float("ALERT_DIGEST_SECONDS", default=900.0)
# The Celery queue of deliveries (a worker started with -Q <it>: entrypoint.sh
# deliveries); empty: the default queue (./scripts/run's single worker).
ALERT_DELIVERY_QUEUE: str = env.str("ALERT_DELIVERY_QUEUE", default="")
if ALERT_DELIVERY_QUEUE:
    CELERY_TASK_ROUTES["dashboard.deliver_alert"] = {"queue": ALERT_DELIVERY_QUEUE}
# E-mail goes through Django's SMTP backend: EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER,
# EMAIL_HOST_PASSWORD, EMAIL_USE_TLS / EMAIL_USE_SSL, and the sender ALERT_EMAIL_FROM.
ALERT_EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
ALERT_EMAIL_FROM: str = env.str("ALERT_EMAIL_FROM", default="yunikorn-dashboard@localhost")
EMAIL_HOST: str = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT: int = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER: str = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD: str = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS: bool = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL: bool = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT: int = env.int("EMAIL_TIMEOUT", default=30)

# --- /metrics (dashboard.metrics; docs/operations/metrics.md) ----------------------
# A scrape needs "Authorization: Bearer <METRICS_TOKEN>", or comes from an address in
# METRICS_ALLOWED_NETWORKS (CIDR list); with neither set, /metrics answers 403 to all.
METRICS_TOKEN: str = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS: list[str] = env.list("METRICS_ALLOWED_NETWORKS", default=[])
# A scrape's deadline (below the ServiceMonitor's scrapeTimeout of 10 s): on PostgreSQL
# also its statement timeout; past it the scrape answers 503 instead of piling up.
METRICS_DEADLINE_SECONDS: float = env.float("METRICS_DEADLINE_SECONDS", default=8.0)

# --- Logging --------------------------------------------------------------------
LOG_LEVEL: str = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "dashboard": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.request": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
