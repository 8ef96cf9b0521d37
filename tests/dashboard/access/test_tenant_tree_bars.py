"""A tenant's tree bars: its queues whole, the folded ``(other queues)`` box as its
share (usage and guarantees summed, no max), an ancestor as the tree shows it; never a
name of a hidden queue, and a 403 (naming nothing) for a hidden queue itself."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from support.tenants import Tenants, make_tenants

from dashboard.pages.tenant_tree import OTHER_QUEUES

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _bars(user: Any, queue: str) -> Any:
    client = Client()
    client.force_login(user)
    return client.get(f"/queues/bars/?queue={quote(queue)}")


def _defined(figure: dict[str, Any]) -> dict[str, object]:
    """measure -> its value, of the measures the figure draws as defined"""
    return {
        str(y): x
        for trace in figure["data"]
        if str(trace.get("name", "")).endswith(" defined")
        and not str(trace.get("name", "")).endswith("not defined")
        for y, x in zip(trace.get("y") or (), trace.get("x") or (), strict=True)
    }


@pytest.mark.parametrize("queue", ["root", f"root.{OTHER_QUEUES}", f"root.a.{OTHER_QUEUES}"])
def test_carols_bars_answer_ancestors_and_folded_boxes_without_names(
    tenants: Tenants, queue: str
) -> None:
    answer = _bars(tenants.carol, queue)
    assert answer.status_code == 200, answer.content
    text = json.dumps(answer.json())
    for hidden in ("root.b", "root.a.y"):
        assert hidden not in text
    if OTHER_QUEUES in queue:
        assert "max" not in _defined(answer.json())


def test_the_folded_box_is_the_sum_of_the_hidden_queues_usage(tenants: Tenants, staff: Any) -> None:
    folded = _defined(_bars(tenants.carol, f"root.a.{OTHER_QUEUES}").json())
    whole = _defined(_bars(staff, "root.a.y").json())
    assert folded["allocated"] == whole["allocated"]


@pytest.mark.parametrize("queue", ["root.b", "root.a.y", "root.b.(other queues)"])
def test_a_hidden_queue_answers_the_403_of_an_unknown_one(tenants: Tenants, queue: str) -> None:
    """The same refusal as for a queue that does not exist (the page echoes only the
    asked name back, in its search box)."""
    answer = _bars(tenants.carol, queue)
    unknown = _bars(tenants.carol, "root.nowhere")
    assert (answer.status_code, unknown.status_code) == (403, 403)
    assert _page(answer, queue) == _page(unknown, "root.nowhere")


def _page(answer: Any, asked: str) -> str:
    """the page less the name asked and its form's one-time token"""
    text = answer.content.decode().replace(asked, "Q")
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)
