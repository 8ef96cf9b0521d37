"""Every route as the other tenant, both ways: the queue ACLs of a new config version
give root.a to alice and root.b to bob.  Each of them (both administer a queue, so their
writes reach the services) walks every route with every method on the other's rows:
bob on alice's (the shared ``world`` of test_security.py: a change, a run of root.a),
alice on bob's (a change, a what-if and an alert of root.b, and bob's alert route).

- every write is refused (or a 400 naming only what the walker sent) and writes nothing;
- a create naming the other's queues is refused with 403, for any body Hypothesis
  draws (quota changes, what-ifs, plans, alert routes, the changes page's form);
- no answer, read or write, names one of the other's queues or rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import QUEUES_YAML
from support.queries import captured_writes
from test_security import AUTH_ENDPOINTS, concrete_urls, world  # noqa: F401  (the fixture)

from dashboard import models, services
from dashboard.models.alerting import AlertRoute

pytestmark = pytest.mark.django_db

UNSAFE = ("post", "put", "patch", "delete")
#: what names the other tenant: its queues (root.a holds root.a.x and root.a.y) and
#: the name and recipient of its alert route
NAMES = {
    "alice": ("root.a", "alices-route", "alice@example.org"),
    "bob": ("root.b", "bobs-route", "bob@example.org"),
}
#: pages whose empty form, sent by an administrator of some queue, is shown again (200)
FORM_PAGES = frozenset({"change_create", "whatif"})

ACL_YAML = QUEUES_YAML.replace(
    "          - name: a\n", "          - name: a\n            adminacl: alice\n"
).replace("          - name: b\n", "          - name: b\n            adminacl: bob\n")


@dataclass
class Walk:
    """One tenant signed in, the other tenant's rows and the names that are the other's."""

    walker: Client
    objects: dict[str, object]
    others: tuple[str, ...]


def _route(user: Any, queue: str) -> int:
    name = str(user.get_username())
    route = AlertRoute.objects.create(
        name=f"{name}s-route",
        channel=AlertRoute.Channel.EMAIL,
        email_to=f"{name}@example.org",
        queue=queue,
        owner=user,
    )
    return route.pk


def _bobs_rows(stored: models.ClusterSnapshot, bob: Any) -> dict[str, object]:
    partition = stored.partition
    change = services.schedule_quota_change(
        partition, "root.b", new_max={"vcore": 6000}, user=bob, snapshot=stored
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=stored,
        request={"queue": "root.b", "new_max": {"vcore": 1000}},
        user=bob,
        enqueue=False,
    )
    services.execute_run(run.pk)
    alert = services.raise_alert(
        models.Alert.Kind.QUOTA, "an alert of root.b", partition=partition, queue="root.b"
    )
    return {
        "dashboard.quotachange": change.pk,
        "dashboard.preemptionrun": run.pk,
        "dashboard.alert": alert.pk,
        "dashboard.alertroute": _route(bob, "root.b"),
    }


@pytest.fixture(params=["bob", "alice"])
def walk(
    request: pytest.FixtureRequest, stored: models.ClusterSnapshot, staff: Any, viewer: Any
) -> Walk:
    """test_security.py's ``world`` (alice's rows), the ACLs, bob's rows; then the
    walker (the parameter) signed in, with the other's rows."""
    objects = request.getfixturevalue("world")
    assert ACL_YAML != QUEUES_YAML
    services.import_config(ACL_YAML.encode(), filename="queues.yaml")
    users = get_user_model().objects
    bob = users.create_user("bob", password="pw-bob-12345")
    alice = users.create_user("alice", password="pw-alice-12345")
    alices = {"dashboard.alertroute": _route(alice, "root.a")}
    bobs = _bobs_rows(stored, bob)
    client = Client()
    if request.param == "bob":
        client.force_login(bob)
        return Walk(client, {**objects, **alices}, NAMES["alice"])
    client.force_login(alice)
    return Walk(client, {**objects, **bobs}, NAMES["bob"])


def _leaks(walk: Walk, response: Any) -> list[str]:
    body = getattr(response, "content", b"") if not getattr(response, "streaming", False) else b""
    text = body.decode("utf-8", "replace")
    return [name for name in walk.others if name in text]


def test_every_write_of_the_other_tenant_is_refused(walk: Walk) -> None:
    client = walk.walker
    # "access" (the walker's own API token) is in AUTH_ENDPOINTS: its own account
    urls = [(n, u) for n, u in concrete_urls(walk.objects) if n not in AUTH_ENDPOINTS]
    problems: list[str] = []
    changes = models.QuotaChange.objects.count()
    for name, url in urls:
        for method in UNSAFE:
            with captured_writes() as writes:
                response = getattr(client, method)(url, data={}, content_type="application/json")
            status = response.status_code
            refused = (
                status in (400, 403, 404, 405)
                or (status == 302 and "login" in response.get("Location", ""))
                # the walker administers a queue, so the changes and what-if forms are its to
                # send: an empty one is shown again with its errors (and writes nothing)
                or (status == 200 and name in FORM_PAGES)
            )
            # a session write of a signed-in user is in the session table only
            real = [w for w in writes if "django_session" not in w and "axes_" not in w]
            leaked = _leaks(walk, response)
            if not refused or real or leaked:
                problems.append(f"{method.upper()} {url} ({name}): {status} {real} {leaked}")
    assert problems == [], "\n".join(problems)
    assert models.QuotaChange.objects.count() == changes


def test_no_read_names_the_other_tenants_queues(walk: Walk) -> None:
    problems: list[str] = []
    for name, url in concrete_urls(walk.objects):
        if name in AUTH_ENDPOINTS:
            continue
        response = walk.walker.get(url)
        leaked = _leaks(walk, response)
        if leaked:
            problems.append(f"GET {url} ({name}): {response.status_code} names {leaked}")
    assert problems == [], "\n".join(problems)


@pytest.fixture
def bob_walks(request: pytest.FixtureRequest, stored: models.ClusterSnapshot) -> Walk:
    """bob signed in on alice's rows (the ``walk`` fixture's first parameter)."""
    objects = request.getfixturevalue("world")
    services.import_config(ACL_YAML.encode(), filename="queues.yaml")
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    client = Client()
    client.force_login(bob)
    return Walk(client, objects, NAMES["alice"])


@pytest.mark.parametrize("queue", ["root.a", "root.a.x"])
def test_a_write_naming_the_other_tenants_queue_is_a_403_naming_nothing(
    bob_walks: Walk, queue: str
) -> None:
    bob = bob_walks.walker
    snapshot = bob_walks.objects["dashboard.clustersnapshot"]
    bodies = {
        "/api/quota-changes/": {"partition": "default", "queue_path": queue, "new_max": {}},
        "/api/whatif/quota/": {"snapshot": snapshot, "queue": queue, "new_max": None},
    }
    for url, body in bodies.items():
        answer = bob.post(url, body, content_type="application/json")
        assert answer.status_code == 403, (url, answer.content)
        assert b"root.a" not in answer.content
    change = bob_walks.objects["dashboard.quotachange"]
    for method, url in (
        ("patch", f"/api/quota-changes/{change}/"),
        ("post", f"/api/quota-changes/{change}/cancel/"),
    ):
        answer = getattr(bob, method)(url, {"new_max": {}}, content_type="application/json")
        assert answer.status_code == 403, (url, answer.content)
        assert b"root.a" not in answer.content


#: alice's queues, configured or not (a dynamic child is hers by inheritance)
ALICE_TARGETS = st.one_of(
    st.sampled_from(["root.a", "root.a.x", "root.a.y"]),
    st.from_regex(r"root\.a\.[a-z][a-z0-9_-]{0,11}", fullmatch=True),
)
quantities = st.integers(min_value=0, max_value=2**40)
resources = st.dictionaries(st.sampled_from(["vcore", "memory", "pods"]), quantities, max_size=3)


Write = tuple[str, str, dict[str, object], bool]


def _writes(
    queue: str, n: int, res: dict[str, int], snapshot: object, change: object
) -> list[Write]:
    """(method, URL, body, is a page) of every write naming *queue*."""
    plan = ACL_YAML.replace("max: {vcore: 8}", f"max: {{vcore: {n + 9}}}")
    if queue not in ("root.a", "root.a.x", "root.a.y"):  # a new queue below root.a
        leaf = queue.rsplit(".", 1)[1]
        plan = plan.replace(
            "              - name: y\n", f"              - name: y\n              - name: {leaf}\n"
        )
    return [
        (
            "post",
            "/api/quota-changes/",
            {"partition": "default", "queue_path": queue, "new_max": res},
            False,
        ),
        ("patch", f"/api/quota-changes/{change}/", {"new_max": res}, False),
        ("post", f"/api/quota-changes/{change}/cancel/", {}, False),
        (
            "post",
            "/api/whatif/quota/",
            {"snapshot": snapshot, "queue": queue, "new_max": res, "wait": True},
            False,
        ),
        (
            "post",
            "/api/whatif/preempt/",
            {
                "snapshot": snapshot,
                "ask": {"key": "x", "queue": queue, "resources": res or {"vcore": 1}},
                "wait": True,
            },
            False,
        ),
        ("post", "/api/plans/", {"text": plan}, False),
        ("post", "/api/plans/schedule/", {"text": plan}, False),
        ("post", "/api/plans/handback/", {"text": plan}, False),
        (
            "post",
            "/api/alert-routes/",
            {"name": f"r{n}", "channel": "email", "email_to": "b@example.org", "queue": queue},
            False,
        ),
        ("post", "/changes/new/", {"queue": queue, "max__vcore": str(n)}, True),
    ]


@given(data=st.data())
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_fuzzed_writes_on_the_other_tenants_queues_are_refused(
    bob_walks: Walk, data: st.DataObject
) -> None:
    """Whatever the queue of alice's (configured or new below hers) and the body: 403,
    nothing written, nothing of hers named."""
    bob = bob_walks.walker
    queue = data.draw(ALICE_TARGETS, label="queue")
    n = data.draw(st.integers(min_value=1, max_value=64), label="n")
    res = data.draw(resources, label="resources")
    snapshot = bob_walks.objects["dashboard.clustersnapshot"]
    change = bob_walks.objects["dashboard.quotachange"]
    for method, url, body, page in _writes(queue, n, res, snapshot, change):
        with captured_writes() as writes:
            if page:
                answer = getattr(bob, method)(url, body)
            else:
                answer = getattr(bob, method)(
                    url, json.dumps(body), content_type="application/json"
                )
        real = [w for w in writes if "django_session" not in w and "axes_" not in w]
        assert answer.status_code == 403, (method, url, body, answer.content)
        assert real == [], (url, real)
        assert _leaks(bob_walks, answer) == [], (url, answer.content)
