"""The what-if answer alone: what the page's script posts and fetches instead of reloading.

The forms post with ``Accept: application/json`` and get the run's answer region
(HTML) and its figures (JSON) back; ``/whatif/answer/?run=`` gives the same for a
run that finished later.  Without script, the plain post and redirect are unchanged
(tests in test_pages_views.py and test_pages_forms.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse
from support.runs import deep_victim_run

from dashboard import models, services
from dashboard.charts.compact import expand_hover

pytestmark = pytest.mark.django_db

EVIL = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"
JSON = {"Accept": "application/json"}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _answer(client: Client, run: int | str, **params: int | str) -> Any:
    return client.get(reverse("whatif_answer"), {"run": run, **params})


def _trace(figure: dict[str, Any]) -> Any:
    """The first trace of a figure as the page's script draws it (hover text joined back)."""
    data: Any = expand_hover(figure)["data"]
    return data[0]


def test_the_script_posts_and_gets_the_answer_alone_with_its_deep_link(
    staff: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """A pending answer says so (and where to wait); once done, the answer and figures come."""
    client = _client(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("whatif") + f"?snapshot={snapshot.pk}",
            {"kind": "quota", "queue": "root.a", "max__vcore": "4"},
            headers=JSON,
        )
        # answered before the worker (here: the commit callbacks) ran: still pending
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json"
        pending = response.json()
    run = models.PreemptionRun.objects.get()
    assert pending["run"] == run.pk
    assert pending["status"] == "pending"
    assert pending["finished"] is False
    assert pending["location"] == (
        reverse("whatif")
        + f"?cluster=default&partition=default&snapshot={snapshot.pk}&run={run.pk}"
    )
    assert reverse("run_wait", args=[run.pk]) in pending["html"]  # the page long-polls there
    assert 'data-testid="run-progress"' in pending["html"]
    assert pending["figures"] == {}

    done = _answer(client, run.pk, snapshot=snapshot.pk)
    assert done.status_code == 200
    assert done["Cache-Control"].startswith("max-age=0")
    answer = done.json()
    assert answer["status"] == "done"
    assert answer["finished"] is True
    assert answer["location"] == pending["location"]
    html = answer["html"]
    assert 'data-testid="run-outcome"' in html
    assert 'data-testid="leaves-table"' in html
    assert "data-live-wait" not in html
    # the schedule form comes back to this answer's page, not to the answer's URL
    assert f'name="next" value="{pending["location"].replace("&", "&amp;")}"' in html
    # the figures travel as JSON beside the HTML, not inside it
    assert "application/json" not in html
    assert set(answer["figures"]) == {"plan-figure", "run-tree-figure", "run-nodes-figure"}
    assert 'data-figure="run-tree-figure"' in html
    tree = _trace(answer["figures"]["run-tree-figure"])
    assert "root.a.x" in tree["ids"]

    # the page itself (a reload of the deep link) shows the same answer
    page = client.get(pending["location"]).content.decode()
    assert f'data-run="{run.pk}"' in page
    assert 'data-testid="leaves-table"' in page
    assert '<script id="run-tree-figure" type="application/json">' in page


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_comes_back_in_the_post_itself(settings: Any) -> None:
    """A run answered within the post's wait comes back finished, figures and all."""
    settings.DASHBOARD_WHATIF_WAIT_SECONDS = 5.0
    snapshot = factories.SnapshotFactory.create()
    staff = factories.UserFactory.create(is_staff=True)
    # committed at once, so eager Celery evaluates the run before the post waits for it
    response = _client(staff).post(
        reverse("whatif") + f"?snapshot={snapshot.pk}",
        {"kind": "preempt", "ask_key": "", "queue": "root.b", "res__vcore": "4"},
        headers=JSON,
    )
    answer = response.json()
    run = models.PreemptionRun.objects.get()
    assert answer["run"] == run.pk
    assert answer["status"] == "done"
    assert answer["finished"] is True
    assert 'data-testid="run-outcome"' in answer["html"]
    assert "run-tree-figure" in answer["figures"]


def test_an_invalid_question_gets_the_page_with_its_errors(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """A form with errors comes back as the page (HTML), for the script to show in place."""
    response = _client(staff).post(
        reverse("whatif"), {"kind": "preempt", "queue": "root.b", "res__vcore": "1.5"}, headers=JSON
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "decimals are not allowed" in response.content.decode()
    assert not models.PreemptionRun.objects.exists()


def test_only_staff_ask_and_only_signed_in_users_read(
    staff: Any, viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Viewers read answers but cannot ask; anonymous visitors get neither."""
    run = factories.make_run(snapshot)
    question = {"kind": "quota", "queue": "root.a", "max__vcore": "4"}
    refused = _client(viewer).post(reverse("whatif"), question, headers=JSON)
    assert refused.status_code == 403
    anonymous = Client().post(reverse("whatif"), question, headers=JSON)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))
    assert models.PreemptionRun.objects.count() == 1

    assert _answer(_client(viewer), run.pk).status_code == 200
    nobody = _answer(Client(), run.pk)
    assert nobody.status_code == 403
    assert nobody.json() == {"detail": "Sign in to read an answer."}
    assert str(run.pk) not in nobody.content.decode()
    # and the staff-only part of an answer (scheduling it) is not in a viewer's
    quota = factories.make_run(
        snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        queue="root.a",
        request={"queue": "root.a", "new_max": {"vcore": 4000}},
        result={"victims": []},
    )
    assert 'data-testid="schedule-it"' not in _answer(_client(viewer), quota.pk).json()["html"]
    assert 'data-testid="schedule-it"' in _answer(_client(staff), quota.pk).json()["html"]


def test_the_script_post_needs_the_csrf_token(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """The fetch sends the form's own token: without it, 403 and no run."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    question = {"kind": "quota", "queue": "root.a", "max__vcore": "4"}
    assert client.post(reverse("whatif"), question, headers=JSON).status_code == 403
    assert not models.PreemptionRun.objects.exists()
    page = client.get(reverse("whatif")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    answered = client.post(
        reverse("whatif"), {**question, "csrfmiddlewaretoken": token.group(1)}, headers=JSON
    )
    assert answered.status_code == 200
    assert answered.json()["run"] == models.PreemptionRun.objects.get().pk


def test_unknown_or_missing_run(viewer: Any) -> None:
    client = _client(viewer)
    missing = _answer(client, 987654)
    assert missing.status_code == 404
    assert missing.json() == {"detail": "No run 987654."}
    assert client.get(reverse("whatif_answer")).status_code == 400
    assert _answer(client, "x").status_code == 400


def test_queue_names_are_escaped_in_the_answer_and_its_figures(viewer: Any) -> None:
    """HTML in queue, node and allocation names is text in the answer's HTML and figures."""
    scenario = factories.small_scenario()
    scenario["queues"]["children"].append({"name": EVIL, "guaranteed": {"vcore": 1000}})
    scenario["nodes"].append({"id": f"node-{EVIL}", "capacity": {"vcore": 4000}})
    scenario["allocations"].append(
        {
            "key": f"alloc-{EVIL}",
            "app": "<script>alert(2)</script>",
            "queue": f"root.{EVIL}",
            "node": f"node-{EVIL}",
            "resources": {"vcore": 2000},
        }
    )
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    run = factories.make_run(
        snapshot,
        queue=f"root.{EVIL}",
        request={"ask": {"queue": f"root.{EVIL}", "resources": {"vcore": 1000}}},
        result={"fence": f"root.{EVIL}", "victims": [f"alloc-{EVIL}"]},
    )
    models.RunVictim.objects.create(
        run=run,
        position=0,
        allocation_key=f"alloc-{EVIL}",
        app="<script>alert(2)</script>",
        queue=f"root.{EVIL}",
        node=f"node-{EVIL}",
    )
    response = _answer(_client(viewer), run.pk)
    body = response.content.decode()
    # nothing in the body is markup, whatever the names: "<", ">" and "&" travel escaped
    assert not re.search(r"[<>&]", body)
    answer = json.loads(body)
    html = answer["html"]
    assert EVIL not in html
    assert "<script>alert(2)" not in html
    assert f"alloc-{ESCAPED}" in html
    assert f"root.{ESCAPED}" in html
    tree = _trace(answer["figures"]["run-tree-figure"])
    index = tree["ids"].index(f"root.{EVIL}")  # an id, never drawn as text
    assert ESCAPED in tree["labels"][index]
    assert EVIL not in tree["labels"][index]
    assert f"<b>root.{ESCAPED}</b>" in tree["hovertext"][index]
    assert tree["marker"]["line"]["color"][index] == "#c2255c"  # the victims' queue, outlined
    heat = _trace(answer["figures"]["run-nodes-figure"])
    assert f"node-{ESCAPED}" in heat["x"]
    assert all(EVIL not in str(x) for x in heat["x"])


def test_the_kept_tree_follows_waiting_changes(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """The snapshot's tree is kept per process, keyed by the waiting changes too."""
    run = factories.make_run(
        snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        queue="root.a",
        request={"queue": "root.a", "new_max": {"vcore": 4000}},
        result={"victims": []},
    )
    client = _client(staff)
    before = _trace(_answer(client, run.pk).json()["figures"]["run-tree-figure"])
    index = before["ids"].index("root.a")
    assert "scheduled max" not in before["hovertext"][index]
    # root.a has no max yet: rule set seed starts a timer for a newly set max
    snapshot.partition.timer_rules = "seed"
    snapshot.partition.save(update_fields=["timer_rules"])
    services.schedule_quota_change(
        snapshot.partition, "root.a", new_max={"vcore": 4000}, user=staff
    )
    after = _trace(_answer(client, run.pk).json()["figures"]["run-tree-figure"])
    assert "scheduled max 4 cores (planned here)" in after["hovertext"][index]
    # once a config from the cluster shows the change, the hover says so
    models.QuotaChange.objects.filter(queue_path="root.a").update(applied_at=factories.T0)
    applied = _trace(_answer(client, run.pk).json()["figures"]["run-tree-figure"])
    assert "scheduled max 4 cores (in the cluster's config)" in applied["hovertext"][index]


def test_a_big_tree_in_the_answer_shows_three_levels_and_a_trail_to_deep_victims(
    viewer: Any,
) -> None:
    """Past 60 queues, the answer's tree shows three levels, as the tree page does.

    The victims' queue, five levels down, is hidden until a click; the queues above it
    carry a thin crimson trail, and the legend and a line under it say so.
    """
    run = deep_victim_run()
    answer = _answer(_client(viewer), run.pk).json()
    tree = _trace(answer["figures"]["run-tree-figure"])
    assert tree["maxdepth"] == 3
    outline = tree["marker"]["line"]
    line = dict(zip(tree["ids"], zip(outline["color"], outline["width"], strict=True), strict=True))
    assert line["root.deep.l2.l3.l4"] == ("#c2255c", 4)
    assert line["root"] == ("#1c7ed6", 4)  # the fence keeps its own outline
    for above in ("root.deep", "root.deep.l2", "root.deep.l2.l3"):
        assert line[above] == ("#c2255c", 2), above
    assert line["root.many.q3"] == ("#1c7ed6", 2)  # inside the fence, no victims below
    assert "victims below" in answer["html"]
    assert "3 levels shown: click a box to open the levels below it." in answer["html"]
