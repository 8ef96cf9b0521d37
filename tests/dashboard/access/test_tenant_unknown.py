"""An unknown ask key or queue and one of another tenant's queues answer a tenant the
same 403 with the same text: a refusal tells nothing of what exists."""

from __future__ import annotations

from typing import Any

import pytest
from support.tenants import Tenants, make_tenants

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _same_refusal(first: Any, second: Any) -> None:
    assert (first.status_code, second.status_code) == (403, 403), (first.content, second.content)
    assert first.json() == second.json()


def test_an_unknown_ask_key_is_refused_like_another_tenants(tenants: Tenants) -> None:
    alice = tenants.client(tenants.alice)
    body = {"snapshot": tenants.snapshot.pk, "wait": True}
    bobs = alice.post("/api/whatif/preempt/", {**body, "ask_key": "ask-1"}, format="json")
    unknown = alice.post("/api/whatif/preempt/", {**body, "ask_key": "ask-zz"}, format="json")
    _same_refusal(bobs, unknown)
    assert "ask-zz" not in unknown.content.decode()


def test_a_typed_ask_of_an_unknown_queue_is_refused_like_another_tenants(
    tenants: Tenants,
) -> None:
    alice = tenants.client(tenants.alice)

    def ask(queue: str) -> Any:
        typed = {"key": "mine", "queue": queue, "resources": {"vcore": 1000}}
        body = {"snapshot": tenants.snapshot.pk, "ask": typed, "wait": True}
        return alice.post("/api/whatif/preempt/", body, format="json")

    _same_refusal(ask("root.b"), ask("root.nowhere"))


def test_a_round_naming_an_unknown_ask_is_refused_like_a_known_one(tenants: Tenants) -> None:
    alice = tenants.client(tenants.alice)
    body = {"snapshot": tenants.snapshot.pk, "wait": True}
    known = alice.post("/api/rounds/", {**body, "ask_keys": ["ask-1"]}, format="json")
    unknown = alice.post("/api/rounds/", {**body, "ask_keys": ["ask-zz"]}, format="json")
    _same_refusal(known, unknown)


def test_an_unknown_queue_is_refused_like_another_tenants_everywhere(tenants: Tenants) -> None:
    """Quota changes, quota what-ifs, the queue over time and the work lost."""
    alice = tenants.client(tenants.alice)
    snap = tenants.snapshot.pk
    for queue_pair in (("root.b", "root.nowhere"),):
        answers = []
        for queue in queue_pair:
            answers.append(
                [
                    alice.post(
                        "/api/quota-changes/",
                        {"partition": "default", "queue_path": queue, "new_max": {}},
                        format="json",
                    ),
                    alice.post(
                        "/api/whatif/quota/",
                        {"snapshot": snap, "queue": queue, "new_max": None, "wait": True},
                        format="json",
                    ),
                    alice.get(f"/api/queue-over-time/?queue={queue}"),
                    alice.get(f"/api/work-lost/?queue={queue}"),
                ]
            )
        for other, unknown in zip(*answers, strict=True):
            _same_refusal(other, unknown)
