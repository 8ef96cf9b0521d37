"""Every route as the other tenant: the queue ACLs of a new config version give root.a
to alice and root.b to bob, and bob (who administers a queue, so his writes reach the
services) walks every route with every method on alice's rows (the shared ``world``
of test_security.py: a change, a run and an alert of root.a).

- every write is refused (or a 400 naming only what bob sent) and writes nothing;
- a create naming alice's queues is refused with 403;
- no answer, read or write, names one of alice's queues.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from reliability_support import QUEUES_YAML
from support.queries import captured_writes
from test_security import AUTH_ENDPOINTS, concrete_urls, world  # noqa: F401  (the fixture)

from dashboard import models, services

pytestmark = pytest.mark.django_db

UNSAFE = ("post", "put", "patch", "delete")
ALICE_QUEUES = ("root.a",)
#: pages whose empty form, sent by an administrator of some queue, is shown again (200)
FORM_PAGES = frozenset({"change_create"})  # root.a, root.a.x, root.a.y all contain it

ACL_YAML = QUEUES_YAML.replace(
    "          - name: a\n", "          - name: a\n            adminacl: alice\n"
).replace("          - name: b\n", "          - name: b\n            adminacl: bob\n")


@dataclass
class Walk:
    bob: Client
    objects: dict[str, object]


@pytest.fixture
def walk(request: pytest.FixtureRequest, stored: Any, staff: Any, viewer: Any) -> Walk:
    """test_security.py's ``world`` (alice's rows), then the ACLs, then bob signed in."""
    objects = request.getfixturevalue("world")
    assert ACL_YAML != QUEUES_YAML
    services.import_config(ACL_YAML.encode(), filename="queues.yaml")
    user = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    client = Client()
    client.force_login(user)
    return Walk(client, objects)


def _leaks(response: Any) -> list[str]:
    body = getattr(response, "content", b"") if not getattr(response, "streaming", False) else b""
    text = body.decode("utf-8", "replace")
    return [q for q in ALICE_QUEUES if q in text]


def test_every_write_of_the_other_tenant_is_refused(walk: Walk) -> None:
    bob = walk.bob
    # "access" (bob's own API token) is in AUTH_ENDPOINTS: his own account
    urls = [(n, u) for n, u in concrete_urls(walk.objects) if n not in AUTH_ENDPOINTS]
    problems: list[str] = []
    changes = models.QuotaChange.objects.count()
    for name, url in urls:
        for method in UNSAFE:
            with captured_writes() as writes:
                response = getattr(bob, method)(url, data={}, content_type="application/json")
            status = response.status_code
            refused = (
                status in (400, 403, 404, 405)
                or (status == 302 and "login" in response.get("Location", ""))
                # bob administers root.b, so the changes page's form is his to send: an
                # empty one is shown again with its errors (and writes nothing, below)
                or (status == 200 and name in FORM_PAGES)
            )
            # a session write of a signed-in user is in the session table only
            real = [w for w in writes if "django_session" not in w and "axes_" not in w]
            if not refused or real or _leaks(response):
                problems.append(
                    f"{method.upper()} {url} ({name}): {status} {real} {_leaks(response)}"
                )
    assert problems == [], "\n".join(problems)
    assert models.QuotaChange.objects.count() == changes


@pytest.mark.parametrize("queue", ["root.a", "root.a.x"])
def test_a_write_naming_the_other_tenants_queue_is_a_403_naming_nothing(
    walk: Walk, queue: str
) -> None:
    bob = walk.bob
    snapshot = walk.objects["dashboard.clustersnapshot"]
    bodies = {
        "/api/quota-changes/": {"partition": "default", "queue_path": queue, "new_max": {}},
        "/api/whatif/quota/": {"snapshot": snapshot, "queue": queue, "new_max": None},
    }
    for url, body in bodies.items():
        answer = bob.post(url, body, content_type="application/json")
        assert answer.status_code == 403, (url, answer.content)
        assert b"root.a" not in answer.content
    change = walk.objects["dashboard.quotachange"]
    for method, url in (
        ("patch", f"/api/quota-changes/{change}/"),
        ("post", f"/api/quota-changes/{change}/cancel/"),
    ):
        answer = getattr(bob, method)(url, {"new_max": {}}, content_type="application/json")
        assert answer.status_code == 403, (url, answer.content)
        assert b"root.a" not in answer.content


def test_no_read_names_the_other_tenants_queues(walk: Walk) -> None:
    bob = walk.bob
    problems: list[str] = []
    for name, url in concrete_urls(walk.objects):
        if name in AUTH_ENDPOINTS:
            continue
        response = bob.get(url)
        leaked = _leaks(response)
        if leaked:
            problems.append(f"GET {url} ({name}): {response.status_code} names {leaked}")
    assert problems == [], "\n".join(problems)
