"""A fired quota change as YuniKorn config: read back by the config importer it gives the
new max and nothing else changed; the kubectl command survives a real shell."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.template import Context, Template
from rest_framework.test import APIClient
from sources_helpers import CONFIG, T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.config import parse_config
from dashboard.sources import configpatch, services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

GiB = 1024**3
LOWERED = {"vcore": 8000, "memory": 48 * GiB}


def fired_change(yunikorn: FakeYuniKorn) -> tuple[dm.QuotaChange, ClusterSource]:
    """acme-ml followed live; root.batch max lowered 10 -> 8 cores; its timer fires."""
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, namespace="yunikorn"
    )
    outcome = services.poll_source(
        source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder())
    )
    assert outcome.status == "stored"
    platform.import_config(
        (CONFIG / "queues-nested-gpu.yaml").read_bytes(), filename="queues.yaml", now=T0
    )
    partition = dm.Partition.objects.get(name="default")
    change = platform.schedule_quota_change(
        partition, "root.batch", new_max=LOWERED, now=T0 + timedelta(minutes=1)
    )
    assert change.state == dm.QuotaChange.State.WAITING
    assert change.deadline is not None
    platform.sweep_due_changes(now=change.deadline + timedelta(seconds=1))
    change.refresh_from_db()
    # the timer fired in the dashboard: a prediction, awaiting the scheduler (not done)
    assert change.state == dm.QuotaChange.State.FIRED, change.reason
    return change, source


def test_config_for_a_lowered_quota_reads_back_with_only_the_new_max(
    yunikorn: FakeYuniKorn, viewer_client: APIClient
) -> None:
    change, _ = fired_change(yunikorn)
    original = parse_config((CONFIG / "queues-nested-gpu.yaml").read_bytes())

    response = viewer_client.get(f"/api/quota-changes/{change.pk}/config/")

    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["in_force"] is True
    new = parse_config(answer["queues_yaml"])
    changes = original.diff(new)
    assert [(c.partition, c.queue, c.field, c.kind) for c in changes] == [
        ("default", "root.batch", "max", "changed")
    ]
    assert changes[0].old == {"vcore": 10000, "memory": 48 * GiB}
    assert changes[0].new == LOWERED
    assert changes[0].is_decrease
    assert new.queue("root.batch") is not None
    assert new.queue("root.batch").max == LOWERED  # type: ignore[union-attr]  # checked above

    configmap = parse_config(answer["configmap"], filename="configmap.yaml")
    assert configmap.source_format == "configmap"
    assert configmap.configmap is not None
    assert configmap.configmap["namespace"] == "yunikorn"
    assert configmap.configmap["name"] == "yunikorn-configs"
    assert [(c.queue, c.field) for c in original.diff(configmap)] == [("root.batch", "max")]


def test_kubectl_patch_is_json_and_shell_quoted(yunikorn: FakeYuniKorn) -> None:
    change, _ = fired_change(yunikorn)

    answer = configpatch.change_config(change)

    args = shlex.split(answer.kubectl_patch)
    assert args[:9] == [
        "kubectl",
        "patch",
        "configmap",
        "yunikorn-configs",
        "-n",
        "yunikorn",
        "--type",
        "merge",
        "-p",
    ]
    assert len(args) == 10
    assert json.loads(args[9]) == {"data": {"queues.yaml": answer.queues_yaml}}
    assert answer.kubectl_patch.endswith("'")  # the JSON travels in single quotes


def _fake_kubectl(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "kubectl"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.subprocess
def test_the_command_runs_in_a_real_shell_with_quotes_in_the_config(tmp_path: Path) -> None:
    """queues-small.yaml has an apostrophe and double quotes: sh hands kubectl the exact JSON."""
    text = (CONFIG / "queues-small.yaml").read_text(encoding="utf-8")
    assert "'" in text
    assert '"' in text
    platform.import_config(text.encode(), filename="queues.yaml", now=T0)
    ClusterSource.objects.create(
        name="small", base_url="http://yk:9080", namespace="ops-yk", configmap_name="yk-cfg"
    )
    partition = dm.Partition.objects.get(name="default")
    change = platform.schedule_quota_change(
        partition, "root.adhoc", new_max={"vcore": 2000, "memory": 8 * 10**9}, now=T0
    )

    answer = configpatch.change_config(change)
    ran = subprocess.run(
        ["sh", "-c", answer.kubectl_patch],
        env=_fake_kubectl(tmp_path),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    argv = json.loads(ran.stdout)
    assert argv[:8] == ["patch", "configmap", "yk-cfg", "-n", "ops-yk", "--type", "merge", "-p"]
    patched = json.loads(argv[8])["data"]["queues.yaml"]
    assert patched == answer.queues_yaml
    assert "YuniKorn's config syntax" in patched  # comments kept
    changes = parse_config(text).diff(parse_config(patched))
    assert [(c.queue, c.field, c.new) for c in changes] == [
        ("root.adhoc", "max", {"vcore": 2000, "memory": 8 * 10**9})
    ]
    assert answer.in_force  # no delay on root.adhoc: in force when saved


def test_no_source_no_patch(viewer_client: APIClient) -> None:
    """A partition that follows no live scheduler: the API says so; the page shows nothing."""
    platform.import_config(
        (CONFIG / "queues-small.yaml").read_bytes(), filename="queues.yaml", now=T0
    )
    partition = dm.Partition.objects.get(name="default")
    change = platform.schedule_quota_change(
        partition, "root.adhoc", new_max={"vcore": 2000}, now=T0
    )

    response = viewer_client.get(f"/api/quota-changes/{change.pk}/config/")

    assert response.status_code == 400
    assert "no cluster source" in response.json()["change"][0]
    html = Template("{% load sources %}{% change_config change %}").render(
        Context({"change": change})
    )
    assert html.strip() == ""
    assert viewer_client.get("/api/quota-changes/999999/config/").status_code == 404


def test_change_page_include_shows_the_command_escaped(yunikorn: FakeYuniKorn) -> None:
    change, _ = fired_change(yunikorn)
    answer: dict[str, Any] = configpatch.change_config(change).to_dict()

    html = Template("{% load sources %}{% change_config change %}").render(
        Context({"change": change})
    )

    assert 'data-testid="kubectl-patch"' in html
    assert "kubectl patch configmap yunikorn-configs -n yunikorn --type merge -p" in html
    assert answer["kubectl_patch"] not in html  # quotes are HTML-escaped ...
    assert "&#x27;" in html  # ... as &#x27; for the single quotes


def test_the_config_needs_an_imported_version(yunikorn: FakeYuniKorn) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    services.poll_source(source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder()))
    partition = dm.Partition.objects.get(name="default")
    change = platform.schedule_quota_change(
        partition, "root.batch", new_max=LOWERED, now=T0 + timedelta(minutes=1)
    )

    with pytest.raises(platform.ServiceError, match="no imported queue config"):
        configpatch.change_config(change)


def test_a_change_of_max_and_delay_writes_both(
    yunikorn: FakeYuniKorn, viewer_client: APIClient
) -> None:
    """A change that also sets the delay hands back root.batch's max and its
    quota.preemption.delay property; nothing else differs and no by-hand note is left."""
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, namespace="yunikorn"
    )
    services.poll_source(source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder()))
    platform.import_config(
        (CONFIG / "queues-nested-gpu.yaml").read_bytes(), filename="queues.yaml", now=T0
    )
    partition = dm.Partition.objects.get(name="default")
    change = platform.schedule_quota_change(
        partition, "root.batch", new_max=LOWERED, new_delay=900, now=T0 + timedelta(minutes=1)
    )
    original = parse_config((CONFIG / "queues-nested-gpu.yaml").read_bytes())

    answer = viewer_client.get(f"/api/quota-changes/{change.pk}/config/").json()

    assert answer["new_delay"] == 900
    new = parse_config(answer["queues_yaml"])
    assert sorted((c.queue, c.field) for c in original.diff(new)) == [
        ("root.batch", "max"),
        ("root.batch", "quota_preemption_delay"),
    ]
    batch = new.queue("root.batch")
    assert batch is not None
    assert batch.quota_preemption_delay == 900
    assert batch.properties["quota.preemption.delay"] == "15m"
    configmap = parse_config(answer["configmap"], filename="configmap.yaml")
    assert configmap.queue("root.batch").quota_preemption_delay == 900  # type: ignore[union-attr]
    assert not any("delay" in note for note in answer["notes"])
    html = Template("{% load sources %}{% change_config change %}").render(
        Context({"change": change})
    )
    assert "the max and the quota preemption delay of" in html
