"""The image's entry points, run as plain processes the way the Containerfile and the
manifests run them: ``migrate`` (with the default source), ``prune``, ``web`` (gunicorn
with deploy/gunicorn.conf.py), ``worker``, ``poller`` and ``beat``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from deploy_support import ENTRYPOINT, ROOT, Deployment, request

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
    listed = deployment.run(
        "manage",
        "shell",
        "-c",
        "from dashboard.sources.models import ClusterSource as S; "
        "print([(s.name, s.base_url, s.cluster.name) for s in S.objects.all()])",
    )
    assert "[('yunikorn', 'http://yunikorn-service.yunikorn.svc:9080', 'default')]" in listed


def test_prune_runs_once_and_reports(sqlite_deployment: Deployment) -> None:
    out = sqlite_deployment.run("prune")
    assert "deleted 0 of 0 polled snapshots (0 protected)" in out


def test_web_serves_the_login_page_and_static_files_with_threaded_workers(
    sqlite_deployment: Deployment,
) -> None:
    """gunicorn from the config file: threaded workers that buffer each request
    (dashboard.webserver, gthread's subclass), /login/ and a static file answer."""
    web, port = sqlite_deployment.web()
    login = request(port, "/login/")
    assert login.status == 200, login.text()[:500]
    assert "Content-Security-Policy" in {k.title(): v for k, v in login.headers.items()}
    css = request(port, "/static/dashboard/css/dashboard.css")
    assert css.status == 200
    assert "Using worker: dashboard.webserver.BufferingThreadWorker" in web.text()


def test_celery_processes_start_on_their_queues(sqlite_deployment: Deployment) -> None:
    """``worker`` consumes the default queue, ``poller`` the polls queue, ``beat`` starts."""
    worker = sqlite_deployment.celery("worker")
    poller = sqlite_deployment.celery("poller")
    sqlite_deployment.celery("beat")
    assert ".> celery " in worker.text()
    assert ".> polls " not in worker.text()
    assert ".> polls " in poller.text()
    assert ".> celery " not in poller.text()


def test_an_unknown_command_is_refused_naming_the_commands() -> None:
    done = subprocess.run(
        [str(ENTRYPOINT), "serve"], cwd=ROOT, capture_output=True, check=False, timeout=30
    )
    assert done.returncode == 64
    assert b"unknown command: serve (web, worker, poller, beat, migrate, prune, manage)" in (
        done.stderr
    )


def test_the_probes_answer_on_the_real_server(sqlite_deployment: Deployment) -> None:
    """/livez and /readyz answer before the host check, the HTTPS redirect and sign-in."""
    _, port = sqlite_deployment.web(SECURE_SSL_REDIRECT="true")
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
