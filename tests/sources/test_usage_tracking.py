"""The scheduler's per-user and per-group usage (``/usage/users``, ``/usage/groups``,
shapes of yunikorn-core's ``dao.UserResourceUsageDAOInfo``), read with a poll, kept on the
source and shown on the queue page as the scheduler's tracking now."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard.importers.errors import ImportFailure
from dashboard.sources import health, services, ugm
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

USERS = "/ws/v1/partition/default/usage/users"
GROUPS = "/ws/v1/partition/default/usage/groups"
GI = 2**30


def tree(leaf_usage: dict[str, int], running: list[str], **limits: Any) -> dict[str, Any]:
    """root -> root.batch, the usage in root.batch (and the same in root)."""
    return {
        "queuePath": "root",
        "resourceUsage": leaf_usage,
        "runningApplications": running,
        "children": [
            {
                "queuePath": "root.batch",
                "resourceUsage": leaf_usage,
                "runningApplications": running,
                **limits,
            }
        ],
    }


USERS_ANSWER = [
    {
        "userName": "alice<script>",
        "groups": {"root.batch": "analysts"},
        "queues": tree(
            {"vcore": 4000, "memory": 8 * GI},
            ["spark-1", "spark-2"],
            maxResources={"vcore": 8000},
            maxApplications=3,
        ),
    },
    {"userName": "bob", "queues": tree({"vcore": 1000}, ["job-9"])},
]
GROUPS_ANSWER = [
    {
        "groupName": "analysts",
        "applications": ["spark-1", "spark-2"],
        "queues": tree({"vcore": 4000, "memory": 8 * GI}, ["spark-1", "spark-2"]),
    }
]


def poll(source: ClusterSource) -> None:
    services.poll_source(
        source.pk,
        now=T0,
        force=True,
        fetch=services.default_fetcher(sleep=SleepRecorder()),
        health=health.default_path_fetcher(services.fetch_policy()),
    )


def test_the_answers_become_per_queue_rows() -> None:
    users = ugm.parse_usage(json.dumps(USERS_ANSWER).encode(), "users")
    assert users["alice<script>"]["root.batch"] == {
        "usage": {"vcore": 4000, "memory": 8 * GI},
        "running": 2,
        "max": {"vcore": 8000},
        "max_apps": 3,
    }
    assert users["bob"]["root"]["max"] is None


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"userName": "x"}, "users"),
        ([{"userName": ""}], "users: [0].userName"),
        ([{"userName": "x", "queues": {"queuePath": ""}}], "users: [0].queues.queuePath"),
        (
            [{"userName": "x", "queues": {"queuePath": "root", "resourceUsage": {"vcore": "1"}}}],
            "users: [0].queues.resourceUsage.vcore",
        ),
    ],
)
def test_a_malformed_answer_is_refused_naming_its_field(doc: object, where: str) -> None:
    with pytest.raises(ImportFailure) as err:
        ugm.parse_usage(json.dumps(doc).encode(), "users")
    assert err.value.location == where


def test_the_queue_page_shows_users_and_groups_escaped(yunikorn: FakeYuniKorn, staff: Any) -> None:
    yunikorn.set_json(USERS, USERS_ANSWER)
    yunikorn.set_json(GROUPS, GROUPS_ANSWER)
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll(source)
    source.refresh_from_db()
    assert set(source.usage_tracking["users"]) == {"alice<script>", "bob"}
    pages = Client()
    pages.force_login(staff)
    html = pages.get(reverse("queue"), {"queue": "root.batch"}).content.decode()
    card = html.split('data-testid="queue-ugm">', 1)[1].split("</section>", 1)[0]
    assert "read by source acme-ml" in card
    users = card.split('data-testid="ugm-users">', 1)[1].split("</table>", 1)[0]
    assert "alice&lt;script&gt;" in users
    assert "<script>" not in card
    assert "memory 8 GiB, vcore 4 cores" in users
    assert "vcore 8 cores" in users  # alice's limit
    groups = card.split('data-testid="ugm-groups">', 1)[1].split("</table>", 1)[0]
    assert "analysts" in groups


def test_a_scheduler_without_the_endpoints_says_so_and_polls_on(
    yunikorn: FakeYuniKorn, staff: Any
) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    poll(source)
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.usage_tracking["error"].startswith(USERS)
    pages = Client()
    pages.force_login(staff)
    html = pages.get(reverse("queue"), {"queue": "root.batch"}).content.decode()
    assert "Not read: /ws/v1/partition/default/usage/users" in html
