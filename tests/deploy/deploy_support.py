"""Helpers of the deployment tests: the image's entry points run as plain processes.

Every process is started through ``deploy/entrypoint.sh`` with the command the
Containerfile and the Kubernetes manifests use (``web``, ``worker``, ``poller``,
``beat``, ``migrate``, ``prune``), in its own process group, and stopped with it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from support.processes import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"
VENV_BIN = str(Path(sys.executable).parent)
PASSWORD = "replica-test-pw-1"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    return free_port()


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def request(
    port: int,
    path: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = 30.0,
) -> Response:
    """One HTTP request to 127.0.0.1:*port* (redirects not followed)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        answer = conn.getresponse()
        return Response(
            answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        )
    finally:
        conn.close()


def with_database(url: str, name: str) -> str:
    """*url* pointing at database *name* instead."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Signal the whole process group (gunicorn's and the pool's children too), reap it."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


@dataclass
class Deployment:
    """Processes of one installation: one database, one broker, shared settings."""

    tmp: Path
    env: dict[str, str]
    procs: list[Proc] = field(default_factory=list)

    def environ(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTEST", "DJANGO_", "CELERY_", "DASHBOARD_", "SOURCES_"))
            and k not in ("DATABASE_URL", "REDIS_URL")
        }
        env.update(
            {
                "PATH": f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
                "PYTHON": sys.executable,
                "PYTHONUNBUFFERED": "1",
                "DASHBOARD_VAR_DIR": str(self.tmp / "var"),
                "SECRET_KEY": "deploy-test-secret-key-" + "x" * 40,
                "DEBUG": "false",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                # plain HTTP to the test's own requests (a test of the redirect turns it on)
                "SECURE_SSL_REDIRECT": "false",
            }
        )
        env.update(self.env)
        env.update(extra)
        # an empty value given by a test unsets the variable (its default applies)
        return {k: v for k, v in env.items() if v != "" or k not in extra}

    def start(self, command: str, *args: str, **extra: str) -> Proc:
        log = self.tmp / f"{command}-{len(self.procs)}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [str(ENTRYPOINT), command, *args],
                cwd=ROOT,
                env=self.environ(extra),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(command, popen, log)
        self.procs.append(proc)
        return proc

    def run(self, command: str, *args: str, timeout: float = 300, **extra: str) -> str:
        """Run a one-shot command (migrate, prune, manage) to its end; its output."""
        done = subprocess.run(
            [str(ENTRYPOINT), command, *args],
            cwd=ROOT,
            env=self.environ(extra),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        output = (done.stdout + done.stderr).decode(errors="replace")
        assert done.returncode == 0, f"{command} exited {done.returncode}:\n{output[-4000:]}"
        return output

    def web(self, **extra: str) -> tuple[Proc, int]:
        """``entrypoint.sh web`` on a free port, once it answers /livez."""
        port = free_port()
        proc = self.start("web", PORT=str(port), HOST="127.0.0.1", **extra)

        def up() -> bool:
            if not proc.alive():
                pytest.fail(f"web exited {proc.popen.returncode}:\n{proc.text()[-4000:]}")
            try:
                return request(port, "/livez", timeout=2).status == 200
            except OSError:
                return False

        wait_until(up, 60, f"gunicorn on port {port}\n{proc.text()[-2000:]}")
        return proc, port

    def celery(self, command: str, **extra: str) -> Proc:
        """``worker``, ``poller`` or ``beat``, once it says it is up."""
        proc = self.start(command, **extra)
        ready = "beat: Starting" if command == "beat" else " ready."

        def up() -> bool:
            if not proc.alive():
                pytest.fail(f"{command} exited {proc.popen.returncode}:\n{proc.text()[-4000:]}")
            return ready in proc.text()

        wait_until(up, 90, f"{command} to start\n{proc.text()[-2000:]}")
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()


class Api:
    """The REST API of the web process on *port*, with a token."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: object | None = None) -> Response:
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return request(self.port, path, method=method, headers=headers, body=data)

    def get(self, path: str) -> Any:
        answer = self.call("GET", path)
        assert answer.status == 200, f"GET {path}: {answer.status} {answer.text()[:500]}"
        return json.loads(answer.body)

    def post(self, path: str, body: object) -> Any:
        answer = self.call("POST", path, body)
        assert answer.status in (201, 202), f"POST {path}: {answer.status} {answer.text()[:500]}"
        return json.loads(answer.body)


def sqlite_site(redis_url: str, tmp: Path, migrated_sqlite: Path) -> Deployment:
    """Processes on a copy (in *tmp*) of the migrated SQLite file and on the Redis at
    *redis_url*, which is emptied first."""
    redis.Redis.from_url(redis_url).flushdb()
    database = tmp / "db.sqlite3"
    shutil.copyfile(migrated_sqlite, database)
    return Deployment(
        tmp,
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
        },
    )


def staff_user(deployment: Deployment, password: str = PASSWORD) -> None:
    """A staff user ``ops`` with *password*, made by ``manage shell``."""
    deployment.run(
        "manage",
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user('ops', password='{password}', is_staff=True)",
    )


def staff_token(deployment: Deployment, password: str = PASSWORD) -> str:
    """A staff user ``ops`` with *password* and its API token, made by ``manage shell``."""
    out = deployment.run(
        "manage",
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "from rest_framework.authtoken.models import Token; "
        f"u = get_user_model().objects.create_user('ops', password='{password}', is_staff=True); "
        "print(Token.objects.create(user=u).key)",
    )
    return out.strip().splitlines()[-1]


def sign_in(port: int, password: str = PASSWORD) -> Response:
    """``ops`` signed in through the login form of the web process on *port* (CSRF token
    first); the answer, a redirect."""
    page = request(port, "/login/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.body)
    assert token is not None
    csrf = page.headers["set-cookie"].split(";", 1)[0]
    form = f"csrfmiddlewaretoken={token.group(1).decode()}&username=ops&password={password}"
    answer = request(
        port,
        "/login/",
        method="POST",
        body=form.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": csrf},
    )
    assert answer.status == 302, answer.text()[:500]
    return answer


def due_quota_change(api: Api) -> Any:
    """A quota change setting a max on ``root.a`` (none yet), due in 3 seconds: the
    partition's timer rules set to ``seed``, which starts a timer for a newly set max."""
    listed = api.get("/api/partitions/")
    (partition,) = listed["results"] if isinstance(listed, dict) else listed
    rules = api.call(
        "POST", f"/api/partitions/{partition['id']}/timer-rules/", {"timer_rules": "seed"}
    )
    assert rules.status == 200, rules.text()[:500]
    return api.post(
        "/api/quota-changes/",
        {
            "partition": "default",
            "queue_path": "root.a",
            "new_max": {"vcore": 5000},
            "new_delay": 3,
        },
    )


class LoopbackServer:
    """A TCP server on a free loopback port: each connection is given to :meth:`serve` in
    a thread of its own until :meth:`stop`.  A subclass sets its own attributes before
    calling ``__init__`` (connections may come at once)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.5)
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listening socket was closed: the test is over
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()
