"""The image's entry points, run as plain processes the way the Containerfile and the
manifests run them: ``migrate`` (with the default source), ``prune``, ``web`` (gunicorn
with deploy/gunicorn.conf.py), ``worker``, ``poller`` and ``beat``."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from deploy_support import ENTRYPOINT, ROOT, Deployment, request
from support.processes import wait_until

pytestmark = pytest.mark.integration


def test_migrate_creates_the_default_source_for_yunikorn_in_its_namespace(
    broker: str, tmp_path: Path
) -> None:
    """``migrate`` migrates, then creates the source for
    http://yunikorn-service.<namespace>.svc:9080; a second run leaves it as it is."""
    deployment = Deployment(
        tmp_path,
        {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "CELERY_BROKER_URL": broker},
    )
    first = deployment.run("migrate", YUNIKORN_NAMESPACE="yunikorn")
    assert "Applying dashboard.0001_initial... OK" in first
    assert "source yunikorn created for http://yunikorn-service.yunikorn.svc:9080" in first
    again = deployment.run("migrate", YUNIKORN_NAMESPACE="other")
    assert "No migrations to apply." in again
    assert "source yunikorn exists (http://yunikorn-service.yunikorn.svc:9080)" in again
    # the rows, read from the file (a ``manage shell`` would cost a Django start)
    with contextlib.closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
        listed = db.execute(
            "SELECT s.name, s.base_url, c.name FROM sources_clustersource s"
            " JOIN dashboard_cluster c ON c.id = s.cluster_id"
        ).fetchall()
    assert listed == [("yunikorn", "http://yunikorn-service.yunikorn.svc:9080", "default")]


@pytest.mark.postgres
def test_pods_starting_at_once_migrate_one_after_another(
    broker: str, postgres_url: str, tmp_path: Path
) -> None:
    """Two ``migrate`` processes at once on a fresh PostgreSQL database (two web pods'
    init containers): both succeed, the tables and the default source are made once."""
    deployment = Deployment(tmp_path, {"DATABASE_URL": postgres_url, "CELERY_BROKER_URL": broker})
    env = deployment.environ({"YUNIKORN_NAMESPACE": "yunikorn"})
    both = [
        subprocess.Popen(
            [str(ENTRYPOINT), "migrate"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0].decode(errors="replace") for p in both]
    assert [p.returncode for p in both] == [0, 0], "\n---\n".join(o[-3000:] for o in outputs)
    applied = [o for o in outputs if "Applying dashboard.0001_initial... OK" in o]
    assert len(applied) == 1, outputs
    [other] = [o for o in outputs if o is not applied[0]]
    assert "No migrations to apply." in other
    assert sum("source yunikorn created" in o for o in outputs) == 1
    assert sum("source yunikorn exists" in o for o in outputs) == 1


def test_prune_runs_once_and_reports(sqlite_deployment: Deployment) -> None:
    out = sqlite_deployment.run("prune")
    assert "deleted 0 of 0 polled snapshots (0 protected)" in out


def test_web_serves_the_login_page_and_static_files_with_threaded_workers(
    sqlite_deployment: Deployment,
) -> None:
    """gunicorn from the config file: threaded workers that buffer each request
    (dashboard.webserver, gthread's subclass), /login/ and a static file answer. One
    worker process (GUNICORN_WORKERS): each imports Django, and one shows the class."""
    web, port = sqlite_deployment.web(GUNICORN_WORKERS="1")
    login = request(port, "/login/")
    assert login.status == 200, login.text()[:500]
    assert "Content-Security-Policy" in {k.title(): v for k, v in login.headers.items()}
    css = request(port, "/static/dashboard/css/dashboard.css")
    assert css.status == 200
    assert "Using worker: dashboard.webserver.BufferingThreadWorker" in web.text()


def test_celery_processes_start_on_their_queues(sqlite_deployment: Deployment) -> None:
    """``worker`` consumes the default queue, ``poller`` the polls queue, ``deliveries`` the
    deliveries queue, ``beat`` starts; each marks itself alive for the liveness probe
    (``alive NAME``), and the probe fails once the process is gone."""
    worker = sqlite_deployment.celery("worker")
    poller = sqlite_deployment.celery("poller")
    deliveries = sqlite_deployment.celery("deliveries")
    beat = sqlite_deployment.celery("beat")
    assert ".> celery " in worker.text()
    assert ".> polls " not in worker.text()
    assert ".> deliveries " not in worker.text()
    assert ".> polls " in poller.text()
    assert ".> celery " not in poller.text()
    assert ".> deliveries " in deliveries.text()
    assert ".> celery " not in deliveries.text()
    for name in ("worker", "poller", "deliveries", "beat"):
        probe = _alive(sqlite_deployment, name, "30")
        assert probe.returncode == 0, probe.stderr
        assert b"alive: " in probe.stdout
    # the file is touched again and again while the process runs (a worker every 2 s)
    heartbeat = sqlite_deployment.tmp / "var" / "deliveries.alive"
    first = heartbeat.stat().st_mtime
    wait_until(lambda: heartbeat.stat().st_mtime > first, 30, "the next heartbeat")
    for proc in (worker, deliveries, beat):
        proc.stop()
    time.sleep(1.5)
    for name in ("worker", "deliveries", "beat"):
        probe = _alive(sqlite_deployment, name, "1")
        assert probe.returncode == 1, probe.stdout
        assert b"not alive: " in probe.stderr
        assert b"last touched" in probe.stderr
    assert _alive(sqlite_deployment, "nothing", "30").returncode == 1


def _alive(deployment: Deployment, name: str, max_age: str) -> subprocess.CompletedProcess[bytes]:
    """The liveness probe the manifests run (``entrypoint.sh alive NAME MAX_AGE``)."""
    return subprocess.run(
        [str(ENTRYPOINT), "alive", name, max_age],
        cwd=ROOT,
        env=deployment.environ({}),
        capture_output=True,
        check=False,
        timeout=30,
    )


def test_an_unknown_command_is_refused_naming_the_commands() -> None:
    done = subprocess.run(
        [str(ENTRYPOINT), "serve"], cwd=ROOT, capture_output=True, check=False, timeout=30
    )
    assert done.returncode == 64
    known = b"(web, worker, poller, deliveries, beat, migrate, prune, manage, alive)"
    assert b"unknown command: serve " + known in done.stderr


def test_the_probes_answer_on_the_real_server(sqlite_deployment: Deployment) -> None:
    """/livez and /readyz answer before the host check, the HTTPS redirect and sign-in."""
    _, port = sqlite_deployment.web(SECURE_SSL_REDIRECT="true", GUNICORN_WORKERS="1")
    for path in ("/livez", "/readyz"):
        # a Host nobody allowed (the kubelet asks by pod IP), plain HTTP, no session
        answer = request(port, path, headers={"Host": "10.1.2.3:8000"})
        assert answer.status == 200, answer.text()
    assert json.loads(request(port, "/readyz").body) == {
        "status": "ready",
        "checks": {"database": "ok", "broker": "ok"},
    }
    # the same Host is refused everywhere else; plain HTTP is redirected (DEBUG off)
    assert request(port, "/login/", headers={"Host": "10.1.2.3:8000"}).status == 400
    assert request(port, "/login/", headers={"Host": "localhost"}).status == 301
