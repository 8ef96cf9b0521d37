"""The what-if for one ask: why the fence is where it is, detailed "why not", the typed ask kept."""

from __future__ import annotations

import re
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _store(scenario: dict[str, Any]) -> models.ClusterSnapshot:
    snapshot: models.ClusterSnapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    return snapshot


def _ask(client: Client, capture: Any, queue: str, vcore: str, priority: str = "0") -> str:
    with capture(execute=True):
        response = client.post(
            reverse("whatif"),
            {
                "kind": "preempt",
                "ask_key": "",
                "queue": queue,
                "res__vcore": vcore,
                "priority": priority,
                "allow_preempt_other": "on",
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    return client.get(response["Location"]).content.decode()


def _text(html: str, testid: str) -> str:
    match = re.search(rf'data-testid="{testid}"[^>]*>(.*?)</(?:p|div)>', html, re.S)
    assert match is not None, testid
    return re.sub(r"<[^>]+>", "", match.group(1))


def test_fence_at_root_says_usage_plus_ask_exceeds_its_max(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    _store(factories.small_scenario())  # n1 has 10 cores, 8 used
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.b", "4")
    why = _text(html, "fence-why")
    assert "Fence root:" in why
    assert "usage plus ask would exceed the max of root" in why
    assert "vcore: 8 cores used + 4 cores asked &gt; 10 cores max" in why


def test_a_queue_at_its_max_fences_itself(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    scenario = factories.small_scenario()
    scenario["queues"]["children"][0]["max"] = {"vcore": 8000}  # root.a uses exactly 8 cores
    _store(scenario)
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.a.x", "1")
    why = _text(html, "fence-why")
    assert "Fence root.a:" in why
    assert "root.a is at its max (vcore 8 cores): a queue at its max fences itself" in why


def test_policy_fence_is_named(staff: Any, django_capture_on_commit_callbacks: Any) -> None:
    scenario = factories.small_scenario()
    scenario["queues"]["children"][1]["properties"] = {"preemption.policy": "fence"}
    _store(scenario)
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.b", "1")
    assert "root.b has preemption.policy fence (a policy fence)" in _text(html, "fence-why")


def test_why_not_names_the_type_queue_and_node(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    scenario = factories.small_scenario()
    scenario["queues"]["children"][1]["max"] = {"vcore": 30000}
    scenario["queues"]["children"][1]["guaranteed"] = {"vcore": 20000}
    scenario["nodes"][0]["capacity"] = {"vcore": 10000}
    scenario["nodes"].append({"id": "n2", "capacity": {"vcore": 12000}})
    _store(scenario)
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.b", "16")
    details = _text(html, "why-not-details")
    assert (
        "vcore: the ask needs 16 cores on one node; the largest, node n2, has 12 cores" in details
    )


def test_why_not_over_a_queue_max_names_type_and_queue(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    scenario = factories.small_scenario()
    scenario["queues"]["children"][1]["max"] = {"vcore": 2000}
    _store(scenario)
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.b", "3")
    run = models.PreemptionRun.objects.get()
    assert run.outcome == "not_possible"
    details = _text(html, "why-not-details")
    assert "vcore in queue root.b: 0 cores used + 3 cores asked &gt; its max 2 cores" in details


def test_the_form_keeps_a_typed_ask(staff: Any, django_capture_on_commit_callbacks: Any) -> None:
    _store(factories.small_scenario(round_request=True))  # it has pending asks too
    html = _ask(_client(staff), django_capture_on_commit_callbacks, "root.b", "3", priority="7")
    assert re.search(r'<option value="" selected>— type an ask below —</option>', html)
    assert re.search(r'<option value="root.b" selected>', html)
    assert re.search(r'name="res__vcore"[^>]*value="3"', html) or re.search(
        r'value="3"[^>]*name="res__vcore"', html
    )
    assert re.search(r'name="priority" value="7"', html)
