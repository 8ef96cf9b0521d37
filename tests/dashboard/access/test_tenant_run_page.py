"""A run's page for a tenant of the run's queue whose victims lie in queues it cannot
view: shown (as the API's run detail), those victims as their place and resources,
every name of them and of the other queues ``(hidden)``."""

from __future__ import annotations

from typing import Any

import pytest
from support.tenants import Tenants, bobs_whatif, make_tenants, page_client, page_text

from dashboard import models

pytestmark = pytest.mark.django_db

#: names of alice's queues and allocations in the small scenario
ALICE_NAMES = ("root.a", "app-0", "app-1", "k1", "k2")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def test_bob_reads_his_runs_page_with_alices_victims_hidden(tenants: Tenants, staff: Any) -> None:
    run = bobs_whatif(tenants)
    victims = list(run.victims.all())
    assert victims
    assert all(v.queue.startswith("root.a.") for v in victims)
    models.Alert.objects.create(
        kind=models.Alert.Kind.QUOTA,
        message=f"took {victims[0].allocation_key} of {victims[0].app} in {victims[0].queue}",
        queue="root.b",
        partition=run.partition,
        run=run,
        created_at=run.queued_at,
    )
    page = page_client(tenants.bob).get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    text = page_text(page)
    assert [n for n in ALICE_NAMES if n in text] == []
    assert 'data-testid="victims-table"' in text
    assert text.count('<tr class="highlight">') == len(victims)
    assert "(hidden)" in text
    # staff read the names
    assert victims[0].queue in page_client(staff).get(f"/runs/{run.pk}/").content.decode()


def test_a_run_of_a_queue_the_tenant_cannot_view_stays_refused(tenants: Tenants) -> None:
    run = bobs_whatif(tenants)
    page = page_client(tenants.alice).get(f"/runs/{run.pk}/")
    assert page.status_code == 403
    assert "root.b" not in page.content.decode()
