"""/readyz on the real server when the broker or the database cannot be reached: 503 with
JSON naming what failed, while /livez still answers (the process itself is fine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deploy_support import Deployment, closed_port, request

pytestmark = pytest.mark.integration


def test_readyz_names_the_broker_when_it_cannot_be_reached(
    sqlite_deployment: Deployment,
) -> None:
    _, port = sqlite_deployment.web(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0", REDIS_URL=""
    )
    ready = request(port, "/readyz")
    assert ready.status == 503
    assert json.loads(ready.body) == {
        "status": "not ready",
        "checks": {"database": "ok", "broker": "failed (OperationalError)"},
        "failed": ["broker"],
    }
    assert request(port, "/livez").status == 200


def test_readyz_names_the_database_when_it_cannot_be_reached(broker: str, tmp_path: Path) -> None:
    deployment = Deployment(
        tmp_path,
        {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port()}/nowhere",
            "CELERY_BROKER_URL": broker,
        },
    )
    try:
        _, port = deployment.web()
        ready = request(port, "/readyz")
        assert ready.status == 503
        body = json.loads(ready.body)
        assert body["failed"] == ["database"]
        assert body["checks"]["broker"] == "ok"
        assert body["checks"]["database"].startswith("failed (")
        assert request(port, "/livez").status == 200
    finally:
        deployment.stop_all()


def test_prometheus_scrapes_a_pod_ip_over_plain_http(sqlite_deployment: Deployment) -> None:
    """Production settings (the public HTTPS URL: its host only, plain HTTP redirected):
    /metrics, /livez and /readyz answer a scrape by pod IP over plain HTTP, unredirected;
    /metrics still wants its token; every other page keeps the host check and redirect."""
    token = "scrape-token-" + "t" * 30
    _, port = sqlite_deployment.web(
        DASHBOARD_PUBLIC_URL="https://dash.example.org",
        SECURE_SSL_REDIRECT="",
        ALLOWED_HOSTS="",
        METRICS_TOKEN=token,
    )
    pod = {"Host": "10.244.1.17:8000"}
    scrape = request(port, "/metrics", headers={**pod, "Authorization": f"Bearer {token}"})
    assert scrape.status == 200, scrape.text()[:300]
    assert "yunikorn_dashboard_" in scrape.text()
    assert scrape.headers["content-type"].startswith("text/plain")
    refused = request(port, "/metrics", headers=pod)
    assert refused.status == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="metrics"'
    wrong = request(port, "/metrics", headers={**pod, "Authorization": "Bearer nope"})
    assert wrong.status == 401
    for probe in ("/livez", "/readyz"):
        assert request(port, probe, headers=pod).status == 200, probe
    assert request(port, "/login/", headers=pod).status == 400
    plain = request(port, "/login/", headers={"Host": "dash.example.org"})
    assert plain.status == 301
