"""The cluster-source address policy: refused addresses at save time (literal IPs in any
spelling), again after DNS at every poll (DNS cannot move a source past it), and errors
that never echo what the target answered."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard.models import Cluster
from dashboard.sources import addresses, services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

REFUSED_URLS = [
    ("http://169.254.169.254/", "169.254.0.0/16"),
    ("http://2852039166/", "169.254.0.0/16"),  # decimal integer
    ("http://0xa9fea9fe/", "169.254.0.0/16"),  # hex
    ("http://0251.0376.0251.0376/", "169.254.0.0/16"),  # octal
    ("http://169.254.43518/", "169.254.0.0/16"),  # a.b.c16
    ("http://0xA9.0xFE.0xA9.0xFE:9080", "169.254.0.0/16"),
    ("http://[::ffff:a9fe:a9fe]/", "169.254.0.0/16"),  # IPv4-mapped IPv6
    ("http://[::ffff:169.254.169.254]:9080/", "169.254.0.0/16"),
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.0.0/16"),  # NAT64
    ("http://169.254.169.254./", "169.254.0.0/16"),  # trailing dot
    ("http://[fe80::1]:9080/", "fe80::/10"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254/128"),
    ("http://100.100.100.200/", "100.100.100.200/32"),
    ("http://0.0.0.0:9080", "0.0.0.0/8"),
    ("http://0:9080", "0.0.0.0/8"),
    ("http://[::]:9080", "::/128"),
    ("http://127.0.0.1:6379", "port 6379"),
    ("http://10.0.0.7:5432", "port 5432"),
    ("http://localhost:8000", "port 8000"),
]


@pytest.fixture(autouse=True)
def _own_ports(settings: Any) -> None:
    """The dashboard's own ports as a PostgreSQL + Redis + gunicorn deployment has them."""
    settings.SOURCES_DENIED_PORTS = [5432, 6379, 8000]


@pytest.mark.parametrize(("url", "rule"), REFUSED_URLS, ids=[u for u, _ in REFUSED_URLS])
def test_refused_address_is_a_400_naming_the_rule_on_create(
    staff_client: APIClient, url: str, rule: str
) -> None:
    response = staff_client.post(
        "/api/sources/", {"name": "evil", "base_url": url, "partition": "p1"}, format="json"
    )
    assert response.status_code == 400, response.content
    message = " ".join(response.json()["base_url"])
    assert rule in message, message
    assert not ClusterSource.objects.exists()


@pytest.mark.parametrize("url", [u for u, _ in REFUSED_URLS[:8]])
def test_refused_address_is_a_400_on_update_and_in_the_admin_form(
    staff_client: APIClient, url: str
) -> None:
    source = ClusterSource.objects.create(name="ok", base_url="http://10.0.0.9:9080")
    response = staff_client.patch(f"/api/sources/{source.pk}/", {"base_url": url}, format="json")
    assert response.status_code == 400, response.content
    assert "base_url" in response.json()
    source.refresh_from_db()
    assert source.base_url == "http://10.0.0.9:9080"
    with pytest.raises(ValidationError) as info:
        ClusterSource(name="x", base_url=url, partition="p2").full_clean()
    assert "base_url" in info.value.message_dict


@pytest.mark.parametrize(
    "url",
    [
        "http://10.1.2.3:9080",
        "http://192.168.7.7:9080",
        "http://172.20.0.5:9080",
        "http://127.0.0.1:9080",
        "http://yunikorn-service.yunikorn:9080",
        "https://[fd12:3456::1]:9443",
    ],
)
def test_private_and_named_addresses_stay_allowed(staff_client: APIClient, url: str) -> None:
    response = staff_client.post(
        "/api/sources/", {"name": "ok", "base_url": url, "partition": "p1"}, format="json"
    )
    assert response.status_code == 201, response.content


def test_settings_deny_and_allow_networks(staff_client: APIClient, settings: Any) -> None:
    settings.SOURCES_DENIED_NETWORKS = [*addresses.DEFAULT_DENIED_NETWORKS, "10.0.0.0/8"]
    response = staff_client.post(
        "/api/sources/", {"name": "a", "base_url": "http://10.1.1.1:9080"}, format="json"
    )
    assert response.status_code == 400
    assert "10.0.0.0/8" in response.json()["base_url"][0]
    assert "SOURCES_DENIED_NETWORKS" in response.json()["base_url"][0]

    settings.SOURCES_DENIED_NETWORKS = list(addresses.DEFAULT_DENIED_NETWORKS)
    settings.SOURCES_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    refused = staff_client.post(
        "/api/sources/", {"name": "b", "base_url": "http://192.168.1.1:9080"}, format="json"
    )
    assert refused.status_code == 400
    assert "SOURCES_ALLOWED_NETWORKS" in refused.json()["base_url"][0]
    allowed = staff_client.post(
        "/api/sources/", {"name": "c", "base_url": "http://10.20.3.4:9080"}, format="json"
    )
    assert allowed.status_code == 201, allowed.content


def test_default_denied_ports_are_the_dashboards_own(settings: Any) -> None:
    """Database, Redis/broker and web ports come from the settings."""
    settings.CELERY_BROKER_URL = "redis://redis.internal:6380/1"
    settings.DASHBOARD_WEB_PORTS = [8001]
    del settings.SOURCES_DENIED_PORTS
    ports = set(addresses.own_service_ports())
    assert {6380, 8001} <= ports
    db = settings.DATABASES["default"]
    if "postgresql" in db["ENGINE"]:  # CI, and the PostgreSQL runs of this suite
        assert int(db.get("PORT") or 5432) in ports
    refused = addresses.policy_from_settings()
    with pytest.raises(addresses.AddressRefused, match="SOURCES_DENIED_PORTS"):
        refused.check_port(6380)


# ----------------------------------------------------------------- DNS, every poll


def _fake_dns(
    monkeypatch: pytest.MonkeyPatch, answers: Callable[[int], str], name: str = "sched.test"
) -> list[str]:
    """``name`` resolves to ``answers(n)`` on the n-th lookup (0-based); others unchanged."""
    real = socket.getaddrinfo
    given: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == name:
            ip = answers(len(given))
            given.append(ip)
            family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (ip, int(port or 80)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return given


@pytest.fixture
def source_by_name(yunikorn: FakeYuniKorn) -> ClusterSource:
    port = yunikorn.url.rsplit(":", 1)[1]
    return ClusterSource.objects.create(
        name="named", base_url=f"http://sched.test:{port}", partition="default"
    )


def _poll(source: ClusterSource, at: Any) -> services.PollOutcome:
    return services.poll_source(
        source.pk, now=at, force=True, fetch=services.default_fetcher(sleep=SleepRecorder())
    )


def test_a_name_that_resolves_to_a_refused_address_fails_the_poll(
    monkeypatch: pytest.MonkeyPatch, source_by_name: ClusterSource, yunikorn: FakeYuniKorn
) -> None:
    _fake_dns(monkeypatch, lambda n: "169.254.169.254")
    outcome = _poll(source_by_name, T0)
    assert outcome.status == "failed"
    assert "169.254.0.0/16" in outcome.error
    assert "sched.test" in outcome.error
    assert yunikorn.seen == []


def test_dns_rebinding_between_requests_cannot_pass(
    monkeypatch: pytest.MonkeyPatch, source_by_name: ClusterSource, yunikorn: FakeYuniKorn
) -> None:
    """First lookup: the scheduler; every later one: the metadata address.  Each request is
    checked after its own lookup and connects to the address that was checked."""
    lookups = _fake_dns(monkeypatch, lambda n: "127.0.0.1" if n == 0 else "169.254.169.254")
    outcome = _poll(source_by_name, T0)
    assert outcome.status == "failed"
    assert "169.254.0.0/16" in outcome.error
    assert len(yunikorn.seen) == 1
    # the request that went through kept the source's host name in its Host header
    assert yunikorn.seen[0].headers["host"].startswith("sched.test")
    assert lookups[:2] == ["127.0.0.1", "169.254.169.254"]


def test_a_name_that_resolves_to_an_allowed_address_polls(
    monkeypatch: pytest.MonkeyPatch, source_by_name: ClusterSource, yunikorn: FakeYuniKorn
) -> None:
    lookups = _fake_dns(monkeypatch, lambda n: "127.0.0.1")
    outcome = _poll(source_by_name, T0)
    assert outcome.status == "stored", outcome.error
    # one lookup per endpoint, one for the events and one for the config, each checked,
    # none repeated
    assert len(lookups) == 6


def test_the_events_request_is_checked_after_its_own_lookup(
    monkeypatch: pytest.MonkeyPatch, source_by_name: ClusterSource, yunikorn: FakeYuniKorn
) -> None:
    """The partition endpoints resolve to the scheduler, the events request to the metadata
    address: the snapshot is stored, the events request never leaves, the source says why."""
    _fake_dns(monkeypatch, lambda n: "127.0.0.1" if n < 4 else "169.254.169.254")
    outcome = _poll(source_by_name, T0)
    assert outcome.status == "stored", outcome.error
    assert [s.path for s in yunikorn.seen][-1] != "/ws/v1/events/batch"
    assert len(yunikorn.seen) == 4
    source_by_name.refresh_from_db()
    assert "169.254.0.0/16" in source_by_name.last_events_error
    assert source_by_name.events_next is None


def test_a_source_saved_before_the_policy_is_refused_at_its_next_poll(
    yunikorn: FakeYuniKorn,
) -> None:
    """A row written around the validators (an old row, a data migration) still cannot poll."""
    ClusterSource.objects.bulk_create(
        [
            ClusterSource(
                name="old",
                base_url="http://2852039166:9080",
                partition="default",
                cluster=Cluster.objects.only_one(),
            )
        ]
    )
    outcome = _poll(ClusterSource.objects.get(name="old"), T0)
    assert outcome.status == "failed"
    assert "169.254.0.0/16" in outcome.error


# ------------------------------------------------------------- errors, last_error

MARKER = "TARGET-CONTENT-7f3a"


def test_errors_never_echo_the_targets_content(
    yunikorn: FakeYuniKorn, viewer_client: APIClient
) -> None:
    """A wrong-shaped answer, a reason phrase and a redirect location written by the target
    never reach last_error, which viewers read."""
    source = ClusterSource.objects.create(name="echo", base_url=yunikorn.url, partition="default")
    queues = "/ws/v1/partition/default/queues"
    yunikorn.set_json(queues, {MARKER: {"children": [{MARKER + "-key": 1}]}})
    first = _poll(source, T0)
    assert first.status == "failed"
    assert MARKER not in first.error
    assert "partition_queues.json" in first.error

    yunikorn.modes[queues] = "reason:" + MARKER
    second = _poll(source, T0)
    assert second.status == "failed"
    assert MARKER not in second.error

    yunikorn.modes[queues] = "redirect:http://elsewhere/" + MARKER
    third = _poll(source, T0)
    assert third.status == "failed"
    assert MARKER not in third.error
    assert "redirect" in third.error

    shown = viewer_client.get(f"/api/sources/{source.pk}/").content.decode()
    assert MARKER not in shown


def test_a_healthy_poll_clears_last_error(yunikorn: FakeYuniKorn) -> None:
    source = ClusterSource.objects.create(name="h", base_url=yunikorn.url, partition="default")
    yunikorn.modes["/ws/v1/partitions"] = "500"
    assert _poll(source, T0).status == "failed"
    source.refresh_from_db()
    assert source.last_error
    yunikorn.modes.clear()
    assert _poll(source, T0).status == "stored"
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.last_error == ""
    assert source.last_error_at is None


def test_environment_proxies_cannot_bypass_the_policy(
    monkeypatch: pytest.MonkeyPatch, source_by_name: ClusterSource, yunikorn: FakeYuniKorn
) -> None:
    """An HTTP_PROXY in the environment would connect past the checked address: ignored."""
    monkeypatch.setenv("HTTP_PROXY", yunikorn.url)  # a "proxy" that answers everything
    monkeypatch.setenv("NO_PROXY", "")
    _fake_dns(monkeypatch, lambda n: "169.254.169.254")
    outcome = _poll(source_by_name, T0)
    assert outcome.status == "failed"
    assert "169.254.0.0/16" in outcome.error
    assert yunikorn.seen == []


@pytest.mark.subprocess
def test_a_process_start_does_not_load_the_http_client() -> None:
    """Django's start (every command line, web and worker process) imports the sources
    app, its models' address checks and its tasks without loading httpx: only a poll,
    which talks to a scheduler, does (63 ms of each start)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, django; django.setup();"
        " import dashboard.sources.services, dashboard.sources.follow;"
        " print('httpx' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False", done.stderr
