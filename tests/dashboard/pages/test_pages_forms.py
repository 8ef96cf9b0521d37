"""The max forms: they start from the max in force, say old -> new, never drop a limit silently."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard import models, services

pytestmark = pytest.mark.django_db
GI = 1 << 30
MAX = {"memory": 64 * GI, "nvidia.com/gpu": 1, "vcore": 16000}


@pytest.fixture
def limited() -> models.ClusterSnapshot:
    """root.a limited in memory, GPU and vcore (16 cores, 8 used)."""
    scenario = factories.small_scenario()
    scenario["queues"]["children"][0]["max"] = dict(MAX)
    scenario["nodes"][0]["capacity"] = {"vcore": 10000, "memory": 128 * GI, "nvidia.com/gpu": 2}
    snapshot: models.ClusterSnapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    return snapshot


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _value(html: str, name: str) -> str:
    match = re.search(rf'<input[^>]*name="{re.escape(name)}"[^>]*>', html)
    assert match is not None, name
    value = re.search(r'value="([^"]*)"', match.group(0))
    return value.group(1) if value else ""


def _checked(html: str, name: str) -> bool:
    match = re.search(rf'<input[^>]*name="{re.escape(name)}"[^>]*>', html)
    assert match is not None, name
    return " checked" in match.group(0)


def test_change_form_starts_from_the_max_in_force(staff: Any, limited: Any) -> None:
    html = _client(staff).get(reverse("changes"), {"queue": "root.a"}).content.decode()
    assert _value(html, "max__vcore") == "16"
    assert _value(html, "max__memory") == "64Gi"
    assert _value(html, "max__nvidia.com/gpu") == "1"
    assert not _checked(html, "unlimited__vcore")
    assert "16 cores" in html  # the "in force" column
    assert 'id="limits-data"' in html


def _in_force_cells(html: str) -> dict[str, str]:
    """The "in force" column of a max form, by type."""
    rows = re.findall(r'<tr data-type="([^"]+)">.*?<td data-in-force>([^<]*)</td>', html, re.S)
    return dict(rows)


def test_before_a_queue_is_chosen_nothing_reads_as_in_force(staff: Any, limited: Any) -> None:
    """With no queue chosen yet the column asks for one, instead of reading "unlimited"."""
    html = _client(staff).get(reverse("changes")).content.decode()
    cells = _in_force_cells(html)
    assert cells, html
    assert set(cells.values()) == {"pick a queue"}, cells
    chosen = _client(staff).get(reverse("changes"), {"queue": "root.a"}).content.decode()
    assert _in_force_cells(chosen)["vcore"] == "16 cores"


def test_an_empty_field_is_refused_not_taken_as_unlimited(staff: Any, limited: Any) -> None:
    response = _client(staff).post(reverse("change_create"), {"queue": "root.a", "max__vcore": "6"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "memory: give a max, or tick &quot;unlimited&quot; to remove the limit" in html
    assert _value(html, "max__vcore") == "6"  # what was typed is kept
    assert not models.QuotaChange.objects.exists()


def test_a_lowered_type_keeps_the_others_and_the_flash_says_old_to_new(
    staff: Any, limited: Any
) -> None:
    response = _client(staff).post(
        reverse("change_create"),
        {"queue": "root.a", "max__vcore": "6", "max__memory": "64Gi", "max__nvidia.com/gpu": "1"},
        follow=True,
    )
    change = models.QuotaChange.objects.get()
    assert change.new_max == {**MAX, "vcore": 6000}
    assert "(vcore 16 cores → 6 cores)" in response.content.decode()


def test_removing_a_limit_needs_confirmation(staff: Any, limited: Any) -> None:
    client = _client(staff)
    form = {
        "queue": "root.a",
        "max__vcore": "16",
        "unlimited__memory": "on",
        "max__nvidia.com/gpu": "1",
    }
    refused = client.post(reverse("change_create"), form).content.decode()
    assert "This removes the limit on memory 64 GiB" in refused
    assert not models.QuotaChange.objects.exists()
    done = client.post(reverse("change_create"), {**form, "confirm_remove": "on"}, follow=True)
    change = models.QuotaChange.objects.get()
    assert change.new_max == {"nvidia.com/gpu": 1, "vcore": 16000}
    assert "memory 64 GiB → unlimited" in done.content.decode()


def test_unchanged_max_and_no_delay_is_refused(staff: Any, limited: Any) -> None:
    html = (
        _client(staff)
        .post(
            reverse("change_create"),
            {
                "queue": "root.a",
                "max__vcore": "16",
                "max__memory": "64Gi",
                "max__nvidia.com/gpu": "1",
            },
        )
        .content.decode()
    )
    assert "Nothing changes" in html
    assert not models.QuotaChange.objects.exists()


def test_whatif_quota_form_starts_from_the_max_in_force(staff: Any, limited: Any) -> None:
    client = _client(staff)
    html = client.get(reverse("whatif"), {"queue": "root.a"}).content.decode()
    assert _value(html, "max__vcore") == "16"
    assert _value(html, "max__memory") == "64Gi"
    refused = client.post(
        reverse("whatif"), {"kind": "quota", "queue": "root.a", "max__vcore": "6"}
    ).content.decode()
    assert "memory: give a max" in refused
    assert not models.PreemptionRun.objects.exists()


def test_edit_form_keeps_every_limit_of_the_change(staff: Any, limited: Any) -> None:
    change = services.schedule_quota_change(
        limited.partition, "root.a", new_max={**MAX, "vcore": 6000}, user=staff
    )
    html = _client(staff).get(reverse("change_edit", args=[change.pk])).content.decode()
    assert _value(html, "max__vcore") == "6"
    assert _value(html, "max__memory") == "64Gi"
    assert _value(html, "max__nvidia.com/gpu") == "1"


# --------------------------------------------------------------------------- fire times


def test_an_enforcement_run_shows_the_delay_and_time_it_really_fired(
    viewer: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """A 1 s change (the snapshot's delay is 60 s) shows "1s · fired at <its deadline>"."""
    t0 = factories.T0
    snapshot.partition.timer_rules = "seed"  # a max newly set: seed starts a timer
    snapshot.partition.save(update_fields=["timer_rules"])
    change = services.schedule_quota_change(
        snapshot.partition, "root.a", new_max={"vcore": 5000}, new_delay=1.0, now=t0
    )
    assert change.deadline == t0 + timedelta(seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.sweep_due_changes(t0 + timedelta(seconds=2)).fired == (change.pk,)
    change.refresh_from_db()
    assert change.run is not None
    html = _client(viewer).get(reverse("run", args=[change.run.pk])).content.decode()
    fire = re.search(r'data-testid="run-fire">([^<]*)<', html)
    assert fire is not None
    assert fire.group(1) == "1s · fired at 2026-09-01 10:00:01 UTC"
    assert "fires at" not in html
    assert "1m" not in fire.group(1)


def _whatif_fire(client: Client, capture: Any, **maxes: str) -> str:
    """The "quota preemption delay" card of a quota what-if of root.a at *maxes* (the
    form's fields, ``max__vcore`` and so on), run when the POST commits."""
    with capture(execute=True):
        response = client.post(reverse("whatif"), {"kind": "quota", "queue": "root.a", **maxes})
    assert response.status_code == 302, response.content.decode()
    html = client.get(response["Location"]).content.decode()
    fire = re.search(r'data-testid="run-fire">([^<]*)<', html)
    assert fire is not None, html
    return fire.group(1)


def test_a_whatif_says_what_saving_it_now_would_do_to_the_timer(
    staff: Any, limited: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The snapshot is old (2026-09-01), the rule set the scheduler's: the card says what
    saving the max now would do, never a past time as a future one. First a timer from
    now; then, with a decrease already waiting, that decrease's start kept."""
    client = _client(staff)
    limits = {"max__memory": "64Gi", "max__nvidia.com/gpu": "1"}
    fresh = _whatif_fire(client, django_capture_on_commit_callbacks, max__vcore="4", **limits)
    assert fresh.startswith(
        "1m · if saved now: timer started: usage exceeds the new max, quota preemption fires at "
    ), fresh
    shown = re.search(r"fires at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", fresh)
    assert shown is not None
    assert shown.group(1) > (timezone.now()).strftime("%Y-%m-%d %H:%M:%S")

    first = services.schedule_quota_change(
        limited.partition,
        "root.a",
        new_max={**MAX, "vcore": 6000},
        user=staff,
        now=timezone.now() - timedelta(seconds=30),
    )
    assert first.deadline is not None
    kept = _whatif_fire(client, django_capture_on_commit_callbacks, max__vcore="4", **limits)
    assert kept.startswith("1m · if saved now: timer kept from the first decrease: "), kept
    assert f"fires at {first.deadline.strftime('%Y-%m-%d %H:%M:%S')} UTC" in kept, kept


def test_a_whatif_setting_a_first_max_says_no_timer_would_start(
    staff: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """root.a has no max: under the scheduler's rules a max newly set is a raise, so
    saving it would start no timer, and the card says so instead of a fire time."""
    fire = _whatif_fire(_client(staff), django_capture_on_commit_callbacks, max__vcore="4")
    assert fire.startswith(
        "1m · if saved now: no timer: a max is set where there was none: the scheduler counts "
        "it as a raise, and no timer starts"
    ), fire
    assert "fires at" not in fire
