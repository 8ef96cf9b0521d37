"""The plan page for a tenant administering a queue: it plans a config whose changes
touch only its queues and reads the answer with every name of the queues it cannot
view (and of their pods, applications and asks) ``(hidden)``, as the API's; the
config in force (every tenant's queues and users) is not offered to edit, and
keeping, handing back and scheduling stay with staff."""

from __future__ import annotations

from typing import Any

import pytest
from support.tenants import CONFIG, Tenants, make_tenants, page_client, page_text

from dashboard import models

pytestmark = pytest.mark.django_db

#: names of alice's queues and allocations in the small scenario
ALICE_NAMES = ("root.a", "app-0", "app-1", "k1", "k2", "team-a")
#: root.b's guarantee lowered: a change of bob's queue only
BOBS_PLAN = CONFIG.replace("guaranteed: {vcore: 5}", "guaranteed: {vcore: 1}")
#: root.a's guarantee changed: a queue bob does not administer
ALICES_PLAN = CONFIG.replace("guaranteed: {vcore: 2}", "guaranteed: {vcore: 1}")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _leaks(text: str) -> list[str]:
    return [n for n in ALICE_NAMES if n in text]


def test_bob_plans_a_change_of_his_queue_and_reads_it_redacted(
    tenants: Tenants, staff: Any
) -> None:
    assert BOBS_PLAN != CONFIG
    bob = page_client(tenants.bob)
    page = bob.get("/plans/?edit=current")
    assert page.status_code == 200
    assert _leaks(page_text(page)) == []  # no config in force to edit
    form = {"partition": "default/default", "text": BOBS_PLAN, "action": "plan"}
    answer = bob.post("/plans/", form)
    assert answer.status_code == 200, answer.content.decode()[-3000:]
    text = page_text(answer)
    start = text.index('data-testid="plan-form"')
    shown = text[text.index("</form>", start) :]  # the answer, after bob's own config
    assert "root.b" in shown
    assert "(hidden)" in shown
    assert _leaks(shown) == []
    whole = page_client(staff).post("/plans/", form).content.decode()
    assert "root.a" in whole[whole.index("</form>") :]
    assert models.QuotaChange.objects.count() == 0


def test_bobs_plan_of_alices_queue_is_refused_and_so_are_staff_actions(
    tenants: Tenants,
) -> None:
    bob = page_client(tenants.bob)
    form = {"partition": "default/default", "text": ALICES_PLAN, "action": "plan"}
    refused = bob.post("/plans/", form)
    assert refused.status_code == 403
    text = page_text(refused)
    assert "1 queue you cannot view" in text
    assert _leaks(text) == []
    for action in ("keep", "schedule", "handback"):
        assert bob.post("/plans/", {**form, "text": BOBS_PLAN, "action": action}).status_code == (
            403
        )
    assert page_client(tenants.carol).get("/plans/").status_code == 403
