"""Why an ask is pending: the scheduler's allocationLog read, stored and set beside the
dashboard's own reading on the application page and the what-if of the ask."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.importers import ImportFailure, parse_snapshot
from dashboard.services.explain.ask import why_pending

pytestmark = pytest.mark.django_db

APP = "bert-finetune-ft12"
NS = 1_788_256_700_000_000_000  # an allocationLog time, in nanoseconds


def _files(**ask_fields: Any) -> dict[str, bytes]:
    """The shared REST answers; the one pending ask (of APP) gets *ask_fields*."""
    rest = Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"
    files = {
        p.name: p.read_bytes()
        for p in sorted(rest.glob("*.json"))
        if p.name != "fullstatedump.json"
    }
    apps = json.loads(files["partition_applications_active.json"])
    ask = next(a for a in apps if a["applicationID"] == APP)["requests"][0]
    ask.update(ask_fields)
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    return files


def _log(*entries: tuple[str, int, int]) -> list[dict[str, Any]]:
    return [{"message": m, "lastOccurrence": t, "count": c} for m, t, c in entries]


def _page(user: Any) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("application"), {"app": APP})
    assert response.status_code == 200
    return response.content.decode()


def test_the_log_is_read_newest_first_in_seconds_with_its_flags() -> None:
    files = _files(
        allocationLog=_log(
            ("Preemption does not help", NS - 5_000_000_000, 2),
            ("Not enough queue quota", NS, 7),
        ),
        schedulingAttempted=True,
        triggeredScaleUp=True,
    )
    (ask,) = parse_snapshot(files).asks
    assert ask["scheduler_log"] == [
        {"message": "Not enough queue quota", "last": NS / 1e9, "count": 7},
        {"message": "Preemption does not help", "last": (NS - 5_000_000_000) / 1e9, "count": 2},
    ]
    assert ask["scheduling_attempted"] is True
    assert ask["triggered_scale_up"] is True


def test_absent_fields_are_empty_as_omitempty_means() -> None:
    (ask,) = parse_snapshot(_files(schedulingAttempted=None)).asks
    assert ask["scheduler_log"] == []
    assert ask["scheduling_attempted"] is False
    assert ask["triggered_scale_up"] is False


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"allocationLog": {"message": "x"}}, "allocationLog"),
        ({"allocationLog": [{"message": "x", "count": "seven"}]}, "allocationLog[0].count"),
        ({"allocationLog": [{"message": "x", "count": -1}]}, "allocationLog[0].count"),
        ({"allocationLog": [{"message": 5}]}, "allocationLog[0].message"),
        ({"allocationLog": [{"lastOccurrence": "soon"}]}, "allocationLog[0].lastOccurrence"),
        ({"triggeredScaleUp": "yes"}, "triggeredScaleUp"),
    ],
)
def test_a_malformed_log_is_refused_naming_its_field(fields: dict[str, Any], where: str) -> None:
    with pytest.raises(ImportFailure) as err:
        parse_snapshot(_files(**fields))
    assert (err.value.location or "").endswith(f"requests[0].{where}")


def test_page_shows_the_schedulers_reasons_and_agrees_on_queue_quota(viewer: Any) -> None:
    """The fixture's ask needs a GPU: root holds 4 of its 4, so the dashboard finds the
    ask over root's max, as the scheduler's "Not enough queue quota" says."""
    services.import_snapshot(
        _files(
            allocationLog=_log(("Not enough queue quota", NS, 7)),
            schedulingAttempted=True,
        )
    )
    html = _page(viewer)
    assert "“Not enough queue quota”" in html
    assert "queue quota; 7 times, last at" in html
    assert "nvidia.com/gpu in queue root:" in html  # the dashboard's own finding
    assert 'data-testid="reasons-agree"' in html
    assert 'data-testid="reasons-disagree"' not in html


def test_page_names_a_disagreement_and_escapes_the_schedulers_text(viewer: Any) -> None:
    """An ask of one core fits under every max and on a node: the scheduler's queue-quota
    reason is then contradicted, and a node predicate's text is one the dashboard does
    not model."""
    services.import_snapshot(
        _files(
            resource={"vcore": 100, "memory": 2**20, "pods": 1},
            allocationLog=_log(
                ("Not enough queue quota", NS, 3),
                ("0/8 nodes: <b>untolerated taint</b>", NS - 1, 1),
            ),
            schedulingAttempted=True,
        )
    )
    html = _page(viewer)
    assert "the ask fits under the max of every queue on its path" in html
    assert 'data-testid="reasons-disagree"' in html
    assert "usage may have fallen since its last try" in html
    assert "predicates the dashboard does not model" in html
    assert "&lt;b&gt;untolerated taint&lt;/b&gt;" in html
    assert "<b>untolerated taint</b>" not in html


def test_an_ask_never_tried_says_so(viewer: Any) -> None:
    services.import_snapshot(_files(schedulingAttempted=None))
    html = _page(viewer)
    assert "nothing yet: it has not tried to place the ask." in html
    assert "(it has not tried to place it yet)" in html  # the dashboard finds it over max


def test_the_what_if_of_the_ask_shows_the_same_reasons(staff: Any) -> None:
    snap = services.import_snapshot(
        _files(allocationLog=_log(("Not enough queue quota", NS, 7)), schedulingAttempted=True)
    )
    ask = snap.asks.get()
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        snapshot=snap,
        request={"ask_key": ask.key},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == models.PreemptionRun.Status.DONE
    explained = services.explain_ask(run)
    assert explained is not None
    pending = explained["pending"]
    assert [e["message"] for e in pending["scheduler"]] == ["Not enough queue quota"]
    assert pending["disagreements"] == []
    client = Client()
    client.force_login(staff)
    html = client.get(reverse("run", args=[run.pk])).content.decode()
    assert "Why the ask is pending" in html
    assert "“Not enough queue quota”" in html


# ------------------------------------------------------------ newer event codes and the cut


def _batch(*records: dict[str, Any]) -> bytes:
    return json.dumps(
        {"InstanceUUID": "u", "LowestID": 0, "HighestID": len(records) - 1, "EventRecords": records}
    ).encode()


@pytest.mark.parametrize(
    ("detail", "name"),
    [
        (213, "APP_CANNOTRUN_QUEUE"),
        (214, "APP_RUNNABLE_QUEUE"),
        (215, "APP_CANNOTRUN_QUOTA"),
        (216, "APP_RUNNABLE_QUOTA"),
        (600, "UG_USER_LIMIT"),
        (601, "UG_GROUP_LIMIT"),
        (602, "UG_APP_LINK"),
        (603, "UG_USER_RESOURCE"),
        (604, "UG_GROUP_RESOURCE"),
    ],
)
def test_newer_event_details_are_named(detail: int, name: str) -> None:
    from dashboard.importers.events import parse_events

    (rec,) = parse_events(
        _batch({"type": 5, "objectID": "alice", "eventChangeDetail": detail, "timestampNano": NS})
    ).records
    assert rec.detail_name == name


def test_a_summary_cut_at_1024_bytes_is_read_and_the_cut_noted() -> None:
    """Go keeps message[:1021] + "...": here the cut falls inside the claimed map, and
    inside a two-byte character, which Go's JSON writes as one U+FFFD."""
    from dashboard.importers.events import MESSAGE_LIMIT, parse_events

    start = "Quota Preemption results summary: preemptable resources: map[vcore:1 "
    pad = "x" * (MESSAGE_LIMIT - 4 - len(start))  # "é" takes bytes 1020 and 1021
    full = start + pad + "é:2], claimed resources: map[vcore:1], selected victims: 2, "
    raw = full.encode()
    head = raw[: MESSAGE_LIMIT - 3]  # what Go keeps: the first byte of "é" only
    cut = head.decode("utf-8", "replace") + "..."
    assert cut.endswith("x\ufffd...")
    parsed = parse_events(
        _batch(
            {
                "type": 4,
                "objectID": "root.a",
                "eventChangeType": 1,
                "eventChangeDetail": 407,
                "timestampNano": NS,
                "message": cut,
            }
        )
    )
    (record,) = parsed.records
    assert record.is_cut
    (quota,) = parsed.quota_preemptions
    assert quota.queue == "root.a"
    assert quota.message == cut
    assert quota.claimed is None  # the figures after the cut are not guessed
    assert any("cut by the scheduler at 1024 bytes" in w for w in parsed.warnings)


def test_a_message_of_exactly_1024_bytes_not_ending_in_dots_is_whole() -> None:
    from dashboard.importers.events import parse_events

    whole = "Preempted by Quota change enforcement process in root." + "q" * 970
    (rec,) = parse_events(
        _batch({"type": 1, "objectID": "k", "message": whole, "timestampNano": NS})
    ).records
    assert not rec.is_cut


@pytest.mark.parametrize("deadline", ["2026-11-27T10:00:00.123456789Z", 1_788_256_800_000_000_000])
def test_newer_backoff_fields_are_accepted(deadline: object) -> None:
    """``backoffDeadline`` (a Go ``*time.Time``: a string; some builds an integer) on an
    application, and the queue's ask back-off settings, are read without error."""
    files = _files()
    apps = json.loads(files["partition_applications_active.json"])
    apps[0]["backoffDeadline"] = deadline
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    queues = json.loads(files["partition_queues.json"])
    queues["unschedAskBackoff"] = 5
    queues["askBackoffDelay"] = "30s"
    queues["properties"] = {
        "application.unschedasks.backoff": "5",
        "application.unschedasks.backoff.delay": "30s",
    }
    files["partition_queues.json"] = json.dumps(queues).encode()
    parsed = parse_snapshot(files)
    assert [a["key"] for a in parsed.asks]  # the pending ask still read


# ------------------------------------------------------------ every limit on the path


def _held_files(*, state: str, max_apps: int | None, **ask_fields: Any) -> dict[str, bytes]:
    """The shared answers with APP in *state* and root.production.training's maximum
    running applications *max_apps* (1 running)."""
    files = _files(**ask_fields)
    apps = json.loads(files["partition_applications_active.json"])
    next(a for a in apps if a["applicationID"] == APP)["applicationState"] = state
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    tree = json.loads(files["partition_queues.json"])
    production = next(c for c in tree["children"] if c["queuename"] == "root.production")
    training = next(
        c for c in production["children"] if c["queuename"] == "root.production.training"
    )
    if max_apps is not None:
        training["maxRunningApps"] = max_apps
    training["runningApps"] = 1
    files["partition_queues.json"] = json.dumps(tree).encode()
    return files


SMALL_ASK = {"resource": {"vcore": 100, "memory": 2**20, "pods": 1}}


def test_an_accepted_application_is_held_by_max_applications(viewer: Any) -> None:
    """maxapplications 1 with one running: the Accepted application cannot start, and
    the page says so first, not "the ask fits"."""
    snap = services.import_snapshot(_held_files(state="Accepted", max_apps=1, **SMALL_ASK))
    why = why_pending(snap, list(snap.asks.all()))[snap.asks.get().key]
    assert why["held_by"] == (
        "held by the queue's max applications: max applications of "
        f"root.production.training: 1 running of 1; application {APP} is Accepted and "
        "cannot start"
    )
    assert [c["kind"] for c in why["checks"] if c["holds"]] == ["max_applications"]
    html = _page(viewer)
    held = html.split('data-testid="held-by"', 1)[1].split("</p>", 1)[0]
    assert "max applications of root.production.training: 1 running of 1" in held
    assert "the ask is within every limit on its path" not in html


def test_a_running_application_is_not_held_by_max_applications() -> None:
    snap = services.import_snapshot(_held_files(state="Running", max_apps=1, **SMALL_ASK))
    why = why_pending(snap, list(snap.asks.all()))[snap.asks.get().key]
    assert why["held_by"] == ""
    (apps,) = [c for c in why["checks"] if c["kind"] == "max_applications"]
    assert not apps["holds"]
    assert why["dashboard"][0].startswith("the ask is within every limit on its path")


LIMITS = b"""partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: production
            queues:
              - name: training
                limits:
                  - limit: alice's cores
                    users: [ml-alice]
                    maxresources: {vcore: 1}
"""


def test_a_user_limit_holds_the_ask_and_agrees_with_user_quota() -> None:
    """The config in force limits ml-alice to 1 core in root.production.training: her
    ask of 0.1 core on top of what her applications use there is held by it, as the
    scheduler's "Not enough user quota" says."""
    snap = services.import_snapshot(
        _held_files(
            state="Running",
            max_apps=None,
            allocationLog=_log(("Not enough user quota", NS, 2)),
            schedulingAttempted=True,
            **SMALL_ASK,
        )
    )
    services.import_config(LIMITS, cluster=snap.partition.cluster.name)
    why = why_pending(snap, list(snap.asks.all()))[snap.asks.get().key]
    assert why["held_by"].startswith(
        "held by a user or group max resources: max resources of user ml-alice in "
        "root.production.training: vcore "
    )
    assert why["held_by"].endswith("asked > 1 core")
    assert why["disagreements"] == []


def test_user_quota_without_a_limit_on_the_path_is_a_disagreement() -> None:
    snap = services.import_snapshot(
        _held_files(
            state="Running",
            max_apps=None,
            allocationLog=_log(("Not enough user quota", NS, 2)),
            schedulingAttempted=True,
            **SMALL_ASK,
        )
    )
    why = why_pending(snap, list(snap.asks.all()))[snap.asks.get().key]
    assert why["held_by"] == ""
    assert any("sets no user or group limit on its path" in d for d in why["disagreements"])
