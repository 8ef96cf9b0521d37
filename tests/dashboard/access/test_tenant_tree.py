"""The queue tree as a tenant sees it: its own queues whole, the queues above them as
the structure they hang from, and every other queue only as its share of the parent
(one "(other queues)" box per parent, named after nothing of theirs)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from support.tenants import Tenants, bobs_whatif, make_tenants

from dashboard.access.grants import access_for
from dashboard.charts.values import QueueRow
from dashboard.pages.tenant_tree import OTHER_QUEUES, tenant_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _figure_paths(page: Any) -> list[str]:
    html = page.content.decode()
    start = html.index('id="tree-figure"')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    figure = json.loads(body)
    return [str(i) for trace in figure["data"] for i in trace.get("ids") or ()]


def test_the_rows_keep_own_queues_and_fold_the_others_into_their_share(
    tenants: Tenants,
) -> None:
    rows = [
        QueueRow("root", used={"vcore": 8000}),
        QueueRow("root.a", used={"vcore": 6000}, guaranteed={"vcore": 2000}),
        QueueRow("root.a.x", used={"vcore": 3000}),
        QueueRow("root.a.y", used={"vcore": 3000}),
        QueueRow("root.b", used={"vcore": 1500}, guaranteed={"vcore": 5000}),
        QueueRow("root.b.c", used={"vcore": 1500}),
        QueueRow("root.z", used={"vcore": 500}),
    ]
    carol = access_for(tenants.carol, tenants.snapshot.partition)
    shown = tenant_rows(rows, carol)
    assert [r.path for r in shown] == [
        "root",
        "root.a",
        "root.a.x",
        f"root.a.{OTHER_QUEUES}",
        f"root.{OTHER_QUEUES}",
    ]
    others = {r.path: r for r in shown}
    # root.a.y is carol's neighbour: its share only
    assert others[f"root.a.{OTHER_QUEUES}"].used == {"vcore": 3000}
    # root.b and root.z (root.b.c inside root.b): one share, their guarantees summed
    assert others[f"root.{OTHER_QUEUES}"].used == {"vcore": 2000}
    assert others[f"root.{OTHER_QUEUES}"].guaranteed == {"vcore": 5000}
    alice = access_for(tenants.alice, tenants.snapshot.partition)
    assert [r.path for r in tenant_rows(rows, alice)] == [
        "root",
        "root.a",
        "root.a.x",
        "root.a.y",
        f"root.{OTHER_QUEUES}",
    ]


def test_the_tree_page_of_a_tenant_names_only_its_queues(tenants: Tenants) -> None:
    for user, mine, other in (
        (tenants.alice, "root.a.x", "root.b"),
        (tenants.bob, "root.b", "root.a"),
    ):
        client = Client()
        client.force_login(user)
        page = client.get("/queues/")
        assert page.status_code == 200, user
        paths = _figure_paths(page)
        assert mine in paths
        assert f"root.{OTHER_QUEUES}" in paths
        assert not [p for p in paths if p.startswith(other)], paths
        assert other not in page.content.decode()
        # the bars of another tenant's queue: refused as an unknown queue is
        for queue in (other, "root.nowhere"):
            assert client.get(f"/queues/bars/?queue={queue}").status_code == 403


def test_a_tenants_run_and_queue_pages_name_no_other_queue(tenants: Tenants) -> None:
    """The run page's tree figure is cut as the tree page's; the queue page names only
    the queue and what is below it."""
    from dashboard import models, services

    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=tenants.snapshot,
        request={"queue": "root.a", "new_max": {"vcore": 4000}},
        user=tenants.alice,
        enqueue=False,
    )
    services.execute_run(run.pk)
    # bob's what-if, whose victims are alice's (the run is of root.b)
    bobs = bobs_whatif(tenants)
    assert bobs.victims.filter(queue__startswith="root.a.").exists()
    victim = bobs.victims.get().queue
    client = Client()
    client.force_login(tenants.alice)
    for url in (
        f"/runs/{run.pk}/",
        "/queues/detail/?queue=root.a",
        f"/queues/detail/?queue={victim}",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        assert victim in page.content.decode() or "root.a" in page.content.decode(), url
        assert "root.b" not in page.content.decode(), url
