"""Pages: sign-in required everywhere; every write is staff-only on the server; CSRF on forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.pages.templatetags.pages import state_label

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


READ_PAGES = [
    "tree",
    "nodes",
    "whatif",
    "changes",
    "history",
    "history_csv",
    "alerts",
    "configs",
]


def _client(user: Any, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


@pytest.fixture
def change(snapshot: models.ClusterSnapshot, staff: Any) -> models.QuotaChange:
    """A waiting decrease of root.a (usage 8 cores above the new max of 4)."""
    # root.a has no max yet: rule set seed starts a timer for a newly set max (the
    # scheduler's rules treat it as a raise and start none)
    snapshot.partition.timer_rules = "seed"
    snapshot.partition.save(update_fields=["timer_rules"])
    return services.schedule_quota_change(
        snapshot.partition, "root.a", new_max={"vcore": 4000}, user=staff, snapshot=snapshot
    )


@pytest.fixture
def alert(db: None) -> models.Alert:
    return factories.make_alert()


@pytest.mark.parametrize("name", [*READ_PAGES, "import"])
def test_anonymous_is_sent_to_sign_in(name: str, snapshot: models.ClusterSnapshot) -> None:
    """Nobody sees anything without signing in: every page redirects to the sign-in page."""
    response = Client().get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", READ_PAGES)
def test_viewer_reads_every_page(name: str, viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    """A viewer sees everything."""
    assert _client(viewer).get(reverse(name)).status_code == 200


def test_viewer_reads_queue_run_and_config_pages(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    run = factories.make_run(snapshot)
    client = _client(viewer)
    assert client.get(reverse("queue"), {"queue": "root.a.x"}).status_code == 200
    assert client.get(reverse("victims"), {"queue": "root.a"}).status_code == 200
    assert client.get(reverse("run", args=[run.pk])).status_code == 200
    assert client.get(reverse("tree_bars"), {"queue": "root.a"}).status_code == 200


def test_viewer_cannot_run_a_whatif(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    """POSTing the what-if form as a viewer is refused and records no run."""
    response = _client(viewer).post(reverse("whatif"), {"kind": "preempt", "ask_key": "ask-1"})
    assert response.status_code == 403
    assert not models.PreemptionRun.objects.exists()


def test_viewer_cannot_schedule(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    response = _client(viewer).post(
        reverse("change_create"), {"queue": "root.a", "max__vcore": "4"}
    )
    assert response.status_code == 403
    assert not models.QuotaChange.objects.exists()


def test_viewer_cannot_edit_a_change(viewer: Any, change: models.QuotaChange) -> None:
    """The edit form itself is refused to a viewer, and so is a forged POST."""
    client = _client(viewer)
    url = reverse("change_edit", args=[change.pk])
    page = client.get(url)
    assert page.status_code == 403
    assert "only staff and queue administrators can change anything" in (
        page.content.decode().lower()
    )
    forged = client.post(url, {"queue": "root.a", "max__vcore": "3", "confirm": "on"})
    assert forged.status_code == 403
    assert [change.pk] == list(models.QuotaChange.objects.values_list("pk", flat=True))
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING


def test_viewer_cannot_cancel(viewer: Any, change: models.QuotaChange) -> None:
    response = _client(viewer).post(reverse("change_cancel", args=[change.pk]))
    assert response.status_code == 403
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING


def test_viewer_cannot_acknowledge(viewer: Any, alert: models.Alert) -> None:
    client = _client(viewer)
    assert client.post(reverse("alert_ack", args=[alert.pk])).status_code == 403
    assert client.post(reverse("alert_ack_all")).status_code == 403
    alert.refresh_from_db()
    assert alert.acknowledged_at is None


def test_viewer_cannot_import(viewer: Any) -> None:
    client = _client(viewer)
    assert client.get(reverse("import")).status_code == 403
    assert client.post(reverse("import"), {"kind": "config"}).status_code == 403


def test_viewer_pages_hide_write_controls(viewer: Any, change: models.QuotaChange) -> None:
    """A viewer gets no edit / cancel / acknowledge buttons (the server refuses them anyway)."""
    factories.make_alert()
    client = _client(viewer)
    changes_html = client.get(reverse("changes")).content.decode()
    assert 'data-testid="edit"' not in changes_html
    assert 'data-testid="cancel"' not in changes_html
    assert 'data-testid="ack"' not in client.get(reverse("alerts")).content.decode()
    assert "viewer" in changes_html


def test_staff_may_write(staff: Any, change: models.QuotaChange, alert: models.Alert) -> None:
    """The same requests succeed for staff: cancel and acknowledge change the rows."""
    client = _client(staff)
    assert client.get(reverse("change_edit", args=[change.pk])).status_code == 200
    assert client.post(reverse("change_cancel", args=[change.pk])).status_code == 302
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.CANCELLED
    assert client.post(reverse("alert_ack", args=[alert.pk])).status_code == 302
    alert.refresh_from_db()
    assert alert.acknowledged_at is not None


def test_forms_need_csrf(staff: Any, change: models.QuotaChange, alert: models.Alert) -> None:
    """A staff POST without the CSRF token is refused and changes nothing."""
    client = _client(staff, csrf=True)
    assert client.post(reverse("change_cancel", args=[change.pk])).status_code == 403
    assert client.post(reverse("alert_ack", args=[alert.pk])).status_code == 403
    change.refresh_from_db()
    alert.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING
    assert alert.acknowledged_at is None


def test_forms_carry_csrf_tokens(staff: Any, change: models.QuotaChange) -> None:
    """Every POST form on the pages includes the CSRF token."""
    factories.make_alert()
    client = _client(staff)
    for name in ("changes", "alerts", "whatif", "import"):
        html = client.get(reverse(name)).content.decode()
        assert html.count('method="post"') == html.count("csrfmiddlewaretoken"), name


def test_logout_is_post_only(viewer: Any) -> None:
    """Signing out is a POST (a link or an image tag cannot sign anybody out)."""
    client = _client(viewer)
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("tree")).status_code == 302


def test_sign_in_page(viewer: Any) -> None:
    """The sign-in form works with a user name and password and lands on the pages."""
    client = Client()
    page = client.get(reverse("login"))
    assert page.status_code == 200
    response = client.post(
        reverse("login"), {"username": viewer.username, "password": "pw-for-tests"}
    )
    assert response.status_code == 302
    assert client.get(reverse("tree")).status_code in (200, 302)


def test_edit_needs_confirmation(staff: Any, change: models.QuotaChange) -> None:
    """Under the seed rule set the edit page warns of the reset; saving without ticking
    "the timer restarts" changes nothing."""
    client = _client(staff)
    url = reverse("change_edit", args=[change.pk])
    page = client.get(url).content.decode()
    assert "Saving resets the timer" in page
    response = client.post(url, {"queue": "root.a", "max__vcore": "3"})
    assert response.status_code == 200
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING
    assert models.QuotaChange.objects.count() == 1


def test_edit_resets_the_timer(staff: Any, change: models.QuotaChange) -> None:
    """Under the seed rule set, a confirmed edit records a new waiting change whose
    deadline counts from now."""
    assert change.deadline is not None
    client = _client(staff)
    response = client.post(
        reverse("change_edit", args=[change.pk]),
        {"queue": "root.a", "max__vcore": "3", "confirm": "on"},
    )
    assert response.status_code == 302
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.RESET
    new = models.QuotaChange.objects.exclude(pk=change.pk).get()
    assert new.state == models.QuotaChange.State.WAITING
    assert new.new_max == {"vcore": 3000}
    assert new.deadline is not None
    assert new.deadline - new.changed_at == timedelta(seconds=new.delay)
    assert new.changed_at >= change.changed_at


def test_edit_under_the_scheduler_rules_keeps_the_first_start(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Under the default rule set (yunikorn-core's), the edit page does not promise a reset,
    and a confirmed further decrease keeps the deadline of the first one."""
    partition = snapshot.partition
    assert partition.timer_rules == "scheduler"
    # a max first (a raise from none: no timer), then a decrease below usage (8 cores)
    services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 16000}, user=staff, snapshot=snapshot
    )
    first = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 4000}, user=staff, snapshot=snapshot
    )
    assert first.state == models.QuotaChange.State.WAITING
    assert first.deadline is not None
    client = _client(staff)
    url = reverse("change_edit", args=[first.pk])
    page = client.get(url).content.decode()
    assert "Saving does not restart the timer" in page
    assert "Saving resets the timer" not in page
    assert "it does not start again" in page  # the confirmation's label
    assert "Save the change" in page

    refused = client.post(url, {"queue": "root.a", "max__vcore": "3"}).content.decode()
    assert "Tick the box to confirm the further change." in refused

    response = client.post(url, {"queue": "root.a", "max__vcore": "3", "confirm": "on"})
    assert response.status_code == 302
    new = models.QuotaChange.objects.filter(queue_path="root.a").latest("id")
    assert new.pk != first.pk
    assert new.state == models.QuotaChange.State.WAITING
    assert new.new_max == {"vcore": 3000}
    assert new.deadline == first.deadline
    assert new.changed_at > first.changed_at
    # the pages say the timer counts from the first change, not from this one
    assert new.timer_started_at == first.changed_at
    started = first.changed_at.strftime("%Y-%m-%d %H:%M:%S")
    change_page = client.get(reverse("change", args=[new.pk])).content.decode()
    assert f'data-testid="timer-start">{started} UTC' in change_page
    assert "not this change's time" in change_page
    listing = client.get(reverse("changes")).content.decode()
    assert f'data-testid="timer-from">timer from {started}</div>' in listing
    # run pages and the history list name change states through the state_label filter
    assert state_label(models.QuotaChange.State.RESET) == "superseded by a later change"
    # the queue page: the first change superseded (not "reset"), both only planned here
    queue_page = client.get(reverse("queue"), {"queue": "root.a"}).content.decode()
    assert "Superseded by a later change</span>" in queue_page
    assert queue_page.count('<span class="pill planned"') == 3  # the max, both decreases
    api = client.get(f"/api/quota-changes/{new.pk}/").json()
    assert api["timer_started_at"] == first.changed_at.isoformat().replace("+00:00", "Z")
    assert api["changed_at"] == new.changed_at.isoformat().replace("+00:00", "Z")


def test_change_page_for_viewer(viewer: Any, change: models.QuotaChange) -> None:
    """A viewer reads a change's page (timer, what it replaced) without its edit button."""
    html = _client(viewer).get(reverse("change", args=[change.pk])).content.decode()
    assert f'data-deadline="{change.deadline.isoformat()}"' in html  # type: ignore[union-attr]
    assert reverse("change_edit", args=[change.pk]) not in html


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_pages_refuse_methods_they_do_not_take(
    method: str, staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Writes only come as POST where a form posts; anything else is 405 and changes nothing."""
    client = _client(staff)
    for name in ("home", "whatif", "tree", "import"):
        assert getattr(client, method)(reverse(name)).status_code == 405, name
    assert not models.PreemptionRun.objects.exists()
