"""The what-if page for a tenant administering a queue: open, its forms listing only
the asks and queues it administers, its answers redacted as the run's page (victims
in queues it cannot view as their place and resources, every name ``(hidden)``)."""

from __future__ import annotations

import pytest
from support.tenants import Tenants, make_tenants, page_client, page_text

from dashboard import models, services

pytestmark = pytest.mark.django_db

#: names of alice's queues and allocations in the small scenario
ALICE_NAMES = ("root.a", "app-0", "app-1", "k1", "k2")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _leaks(text: str) -> list[str]:
    return [n for n in ALICE_NAMES if n in text]


def test_bob_asks_a_what_if_of_his_ask_and_reads_it_redacted(tenants: Tenants) -> None:
    bob = page_client(tenants.bob)
    page = bob.get("/whatif/")
    assert page.status_code == 200
    text = page_text(page)
    assert "ask-1" in text
    assert "root.b" in text
    assert _leaks(text) == []
    asked = bob.post("/whatif/", {"kind": "preempt", "ask_key": "ask-1"})
    assert asked.status_code == 302, asked.content.decode()[-2000:]
    run = models.PreemptionRun.objects.get()
    services.execute_run(run.pk)  # as a worker would
    assert run.victims.filter(queue__startswith="root.a.").exists()
    answer = bob.get(asked["Location"])
    assert answer.status_code == 200
    text = page_text(answer)
    assert 'data-testid="victims-table"' in text
    assert "(hidden)" in text
    assert _leaks(text) == []
    alone = bob.get(f"/whatif/answer/?run={run.pk}")
    assert alone.status_code == 200
    assert _leaks(page_text(alone)) == []


def test_a_what_if_of_another_tenants_queue_is_refused(tenants: Tenants) -> None:
    bob = page_client(tenants.bob)
    refused = bob.post(
        "/whatif/", {"kind": "quota", "queue": "root.a", "max__vcore": "1", "max__memory": ""}
    )
    assert models.PreemptionRun.objects.count() == 0
    assert refused.status_code in (200, 403)
    assert _leaks(page_text(refused).replace('value="root.a"', "")) == []


def test_the_what_if_pages_stay_closed_to_readers_and_to_others_runs(tenants: Tenants) -> None:
    assert page_client(tenants.carol).get("/whatif/").status_code == 403
    bob = page_client(tenants.bob)
    bob.post("/whatif/", {"kind": "preempt", "ask_key": "ask-1"})
    run = models.PreemptionRun.objects.get()
    alice = page_client(tenants.alice)
    assert alice.get(f"/whatif/?run={run.pk}").status_code == 403
    assert alice.get(f"/whatif/answer/?run={run.pk}").status_code == 403
