"""Two tenants of one partition, as the queue ACLs of its config make them.

root.a is administered by the group ``team-a`` (alice), its leaf root.a.x is viewed
by carol (submitacl), root.b is administered by bob; ops administers the root.
The snapshot is the small scenario (allocations in root.a.x and root.a.y, a pending
ask in root.b).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from rest_framework.test import APIClient
from scenarios import SMALL_ASKS, T0, small_scenario

from dashboard import models, services

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        adminacl: ops
        queues:
          - name: a
            adminacl: " team-a"
            resources:
              guaranteed: {vcore: 2}
            properties:
              quota.preemption.delay: 5m
            queues:
              - name: x
                submitacl: carol
              - name: y
          - name: b
            adminacl: bob
            resources:
              guaranteed: {vcore: 5}
"""

#: the same config, with root.a's administration given to bob as well
CONFIG_BOB_ADMINISTERS_A = CONFIG.replace('adminacl: " team-a"', 'adminacl: "bob team-a"')


@dataclass
class Tenants:
    snapshot: models.ClusterSnapshot
    alice: Any
    bob: Any
    carol: Any

    def client(self, user: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client


def make_tenants(*, users: bool = True) -> Tenants:
    """The config and snapshot; with *users*, alice, bob and carol as local accounts."""
    services.import_config(CONFIG.encode(), filename="queues.yaml")
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0,
        scenario=small_scenario(),
        asks=[dict(a) for a in SMALL_ASKS],
        now=T0,
    )
    if not users:
        return Tenants(snapshot, None, None, None)
    accounts = get_user_model().objects
    alice = accounts.create_user("alice", password="pw-alice-1234")
    alice.groups.add(Group.objects.create(name="team-a"))
    bob = accounts.create_user("bob", password="pw-bob-1234")
    carol = accounts.create_user("carol", password="pw-carol-1234")
    return Tenants(snapshot, alice, bob, carol)


def page_client(user: Any) -> Client:
    """A Django test client signed in as *user* (for the pages)."""
    client = Client()
    client.force_login(user)
    return client


def page_text(response: Any) -> str:
    """A page's text less its forms' one-time CSRF tokens: 64 random letters and digits
    that now and then hold a short name (``k1``) a test looks for."""
    text: str = response.content.decode()
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', 'name="csrfmiddlewaretoken"', text)


def bobs_whatif(tenants: Tenants) -> models.PreemptionRun:
    """Bob's what-if of the pending ask of root.b, evaluated: its victims are alice's."""
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        snapshot=tenants.snapshot,
        request={"ask_key": "ask-1"},
        user=tenants.bob,
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    return run
