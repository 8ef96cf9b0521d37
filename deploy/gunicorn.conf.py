"""gunicorn's configuration for the dashboard's web process (``entrypoint.sh web``).

Threaded workers that read every request in their event loop before a thread gets it
(``dashboard.webserver.BufferingThreadWorker``, gunicorn's ``gthread`` plus that
buffering): idle connections and clients that send their headers or a small body a byte
at a time cost a buffer, never a thread, so they cannot take /livez or /login/ down.
Every value can be set from the environment; the defaults suit one pod of the
Kubernetes manifests.
"""

from __future__ import annotations

import os

import gunicorn.workers.gthread as _gthread


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


bind = f"{os.environ.get('HOST', '0.0.0.0')}:{_int('PORT', 8000)}"
wsgi_app = "dashboard.wsgi:application"
worker_class = "dashboard.webserver.BufferingThreadWorker"
# (the worker reads GUNICORN_REQUEST_READ_TIMEOUT, GUNICORN_LIMIT_REQUEST_HEAD and
# GUNICORN_BUFFER_BODY_BYTES itself: see dashboard/webserver.py)
workers = _int("GUNICORN_WORKERS", 2)
threads = _int("GUNICORN_THREADS", 8)
# connections a worker holds open at once (idle kept-alive ones included)
worker_connections = _int("GUNICORN_WORKER_CONNECTIONS", 1000)
# a request taking longer than this gets its worker restarted (the slowest page is
# far below; uploads larger than DASHBOARD_IMPORT_ASYNC_BYTES go to a Celery worker)
timeout = _int("GUNICORN_TIMEOUT", 60)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 25)
keepalive = _int("GUNICORN_KEEPALIVE", 5)
# bounded request line and headers: a client cannot send an endless header
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# heartbeat files in memory (the image's root file system may be read-only)
worker_tmp_dir = os.environ.get(
    "GUNICORN_WORKER_TMP_DIR", "/dev/shm" if os.path.isdir("/dev/shm") else None
)
# no control socket: its default lives in the home directory, shared by every instance
control_socket_disable = True
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# A new connection holds a thread while gunicorn waits for its first bytes, then is
# parked in the event loop.  gunicorn's wait is 5 s, which lets a few dozen idle
# connections queue every thread in turn; a short wait parks them at once.  (gunicorn
# has no setting for it; the attribute is checked so an upgrade that drops it fails.)
if not hasattr(_gthread, "DEFAULT_WORKER_DATA_TIMEOUT"):
    raise RuntimeError("gunicorn.workers.gthread.DEFAULT_WORKER_DATA_TIMEOUT is gone")
_gthread.DEFAULT_WORKER_DATA_TIMEOUT = float(  # type: ignore[attr-defined]  # module constant
    os.environ.get("GUNICORN_FIRST_BYTE_WAIT_SECONDS", "0.1")
)
