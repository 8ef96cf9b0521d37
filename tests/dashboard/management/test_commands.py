"""Management commands: import_config, import_snapshot, export_scenario, load_demo."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from dashboard import models, services


def _call(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py ARGS`` as a real process with *env*; its status and output."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, capture_output=True, text=True
    )


def copy_polled_answers(rest: Path, into: Path) -> tuple[str, ...]:
    """The four answers a poll reads, copied from the REST folder *rest* *into* a folder;
    their names."""
    names = (
        "partitions.json",
        "partition_queues.json",
        "partition_nodes.json",
        "partition_applications_active.json",
    )
    for name in names:
        (into / name).write_bytes((rest / name).read_bytes())
    return names


@pytest.mark.subprocess
@pytest.mark.django_db
def test_import_commands_and_export_feed_python_m_engine(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    out = _call("import_config", str(fixtures_dir / "config" / "queues-nested-gpu.yaml"))
    assert "default v1" in out
    snapshot_id = int(_call("import_snapshot", str(fixtures_dir / "rest")).strip())
    snapshot = models.ClusterSnapshot.objects.get(pk=snapshot_id)
    assert services.snapshot_allocations(snapshot).count() == 19
    [ask] = snapshot.asks.all()
    doc = json.loads(_call("export_scenario", str(snapshot_id), "--ask", ask.key))
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    answer = subprocess.run(
        [sys.executable, "-m", "engine", str(path)], capture_output=True, text=True, check=True
    )
    assert json.loads(answer.stdout)["status"] in ("preempted", "fits", "not_possible")
    quota = '{"vcore": 6000, "memory": 25769803776}'
    doc = json.loads(
        _call("export_scenario", str(snapshot_id), "--quota", f"root.research={quota}")
    )
    path.write_text(json.dumps(doc))
    answer = subprocess.run(
        [sys.executable, "-m", "engine", str(path)], capture_output=True, text=True, check=True
    )
    assert json.loads(answer.stdout)["preemptable"] == {"memory": 8589934592, "vcore": 2000}


@pytest.mark.django_db
def test_state_dump_import_prints_only_the_id(fixtures_dir: Path) -> None:
    out = _call("import_snapshot", str(fixtures_dir / "rest" / "fullstatedump.json"))
    assert out.strip().isdigit()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("command", "path", "expected"),
    [
        ("import_config", "config/invalid/guaranteed-above-max.yaml", "line 13"),
        ("import_config", "config/does-not-exist.yaml", "No such file"),
        ("import_snapshot", "rest/partition_nodes.json", "queue tree"),
        ("import_snapshot", "config", "no .json file"),
        ("import_snapshot", "rest/does-not-exist.json", "No such file"),
    ],
)
def test_bad_input_is_one_clear_error(
    fixtures_dir: Path, command: str, path: str, expected: str
) -> None:
    with pytest.raises(CommandError) as err:
        _call(command, str(fixtures_dir / path))
    assert expected in str(err.value)
    assert "\n" not in str(err.value)
    assert models.ClusterSnapshot.objects.count() == 0
    assert models.ConfigVersion.objects.count() == 0


@pytest.mark.django_db
def test_export_of_a_missing_snapshot_fails() -> None:
    with pytest.raises(CommandError, match="no snapshot 999"):
        _call("export_scenario", "999")


@pytest.mark.django_db
def test_load_demo_is_idempotent_and_prints_credentials(fixtures_dir: Path) -> None:
    first = _call("load_demo", "--fixtures", str(fixtures_dir))
    assert "username=demo password=" in first
    counts = (models.ConfigVersion.objects.count(), models.ClusterSnapshot.objects.count())
    second = _call("load_demo", "--fixtures", str(fixtures_dir), "--password", "s3cret-pw")
    assert "username=demo password=s3cret-pw" in second
    assert counts == (models.ConfigVersion.objects.count(), models.ClusterSnapshot.objects.count())
    assert counts == (2, 1)
    demo = models.ClusterSnapshot.objects.get().partition
    assert demo.quota_preemption_enabled


@pytest.mark.django_db
def test_the_sample_cluster_is_named_after_its_cluster_id_and_dated_by_its_capture(
    fixtures_dir: Path,
) -> None:
    """The sample's REST answers say clusterId mycluster: the cluster (configs included) is
    named so, and the snapshot is dated by the capture (the state dump's timestamp), not by
    the import (issue 28)."""
    _call("load_demo", "--fixtures", str(fixtures_dir))
    assert list(models.Cluster.objects.values_list("name", flat=True)) == ["mycluster"]
    snapshot = models.ClusterSnapshot.objects.get()
    assert snapshot.partition.cluster.name == "mycluster"
    assert snapshot.captured_at.replace(microsecond=0) == datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
    assert models.ConfigVersion.objects.filter(partition__cluster__name="mycluster").count() == 2


@pytest.mark.subprocess
def test_manage_py_exits_non_zero_with_one_line(
    fixtures_dir: Path, tmp_path: Path, migrated_sqlite: Path
) -> None:
    """A real process: exit status 1 and a single error line on stderr."""
    env_db = tmp_path / "cmd.sqlite3"
    shutil.copyfile(migrated_sqlite, env_db)
    import os

    env = {**os.environ, "DATABASE_URL": f"sqlite:///{env_db}"}
    bad = fixtures_dir / "config" / "invalid" / "child-max-above-parent-max.yaml"
    proc = _manage(env, "import_config", str(bad))
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "line 20" in lines[0]


@pytest.mark.django_db
def test_command_takes_the_answer_limit_and_the_upload_keeps_its_own(
    fixtures_dir: Path, tmp_path: Path, settings: Any, staff_client: APIClient
) -> None:
    """Files over the web upload limit but under the poller's answer limit: the command
    imports them, the API upload of the same files still answers 413 and stores nothing."""
    names = copy_polled_answers(fixtures_dir / "rest", tmp_path)
    biggest = max((tmp_path / n).stat().st_size for n in names)
    settings.DASHBOARD_MAX_UPLOAD_BYTES = biggest - 1
    settings.SOURCES_MAX_ANSWER_BYTES = biggest

    before = models.ClusterSnapshot.objects.count()
    handles = [(tmp_path / n).open("rb") for n in names]
    try:
        response = staff_client.post("/api/snapshots/", {"files": handles}, format="multipart")
    finally:
        for h in handles:
            h.close()
    assert response.status_code == 413, response.content
    assert "DASHBOARD_MAX_UPLOAD_BYTES" in json.dumps(response.json())
    assert models.ClusterSnapshot.objects.count() == before

    snapshot_id = int(_call("import_snapshot", str(tmp_path)).strip())
    snapshot = models.ClusterSnapshot.objects.get(pk=snapshot_id)
    assert services.snapshot_allocations(snapshot).count() > 0
    assert models.ClusterSnapshot.objects.count() == before + 1


@pytest.mark.django_db
def test_command_refuses_a_file_over_the_answer_limit_naming_it(
    fixtures_dir: Path, settings: Any
) -> None:
    nodes = fixtures_dir / "rest" / "partition_nodes.json"
    settings.SOURCES_MAX_ANSWER_BYTES = nodes.stat().st_size - 1
    with pytest.raises(CommandError, match="SOURCES_MAX_ANSWER_BYTES"):
        _call("import_snapshot", str(nodes))
    assert not models.ClusterSnapshot.objects.exists()


@pytest.mark.django_db
def test_command_stores_nothing_for_the_answers_of_the_newest_snapshot(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    copy_polled_answers(fixtures_dir / "rest", tmp_path)
    first = int(_call("import_snapshot", str(tmp_path)).strip())

    err = StringIO()
    out = StringIO()
    call_command("import_snapshot", str(tmp_path), stdout=out, stderr=err)
    assert int(out.getvalue().strip()) == first
    assert f"unchanged: the answers are those snapshot {first} was imported from" in (
        err.getvalue()
    )
    assert models.ClusterSnapshot.objects.count() == 1

    # other options name another place: imported there
    other = int(_call("import_snapshot", str(tmp_path), "--partition", "copy").strip())
    assert other != first
    assert models.ClusterSnapshot.objects.count() == 2

    # a changed answer is imported
    nodes = json.loads((tmp_path / "partition_nodes.json").read_bytes())
    nodes[0]["schedulable"] = not nodes[0].get("schedulable", True)
    (tmp_path / "partition_nodes.json").write_text(json.dumps(nodes))
    changed = int(_call("import_snapshot", str(tmp_path)).strip())
    assert changed not in (first, other)

    # the first answers again: no longer the partition's newest snapshot, so stored anew
    (tmp_path / "partition_nodes.json").write_bytes(
        (fixtures_dir / "rest" / "partition_nodes.json").read_bytes()
    )
    again = int(_call("import_snapshot", str(tmp_path)).strip())
    assert again not in (first, other, changed)
    assert models.ClusterSnapshot.objects.count() == 4


@pytest.mark.django_db
def test_command_reads_each_file_once(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.management.commands.import_snapshot import SnapshotFiles

    names = copy_polled_answers(fixtures_dir / "rest", tmp_path)
    reads: list[str] = []
    read = SnapshotFiles.__getitem__

    def counted(self: SnapshotFiles, name: str) -> bytes:
        reads.append(name)
        return read(self, name)

    monkeypatch.setattr(SnapshotFiles, "__getitem__", counted)
    snapshot_id = int(_call("import_snapshot", str(tmp_path)).strip())
    assert sorted(reads) == sorted(names)  # the size checks asked the file system
    assert services.snapshot_allocations(
        models.ClusterSnapshot.objects.get(pk=snapshot_id)
    ).exists()


@pytest.mark.subprocess
def test_command_line_import_ends_with_everything_stored_and_sent(
    fixtures_dir: Path, tmp_path: Path, migrated_sqlite: Path
) -> None:
    """``manage.py import_snapshot`` as a real process (it ends without the interpreter's
    teardown once the import is done): exit status 0, the id printed, the warnings
    written, the snapshot and its spans committed, the warm-up tasks in the broker; a
    refusal still exits 1 with its one line."""
    import os
    import sqlite3

    db = tmp_path / "cmd.sqlite3"
    broker = tmp_path / "broker.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{broker}",
        "DASHBOARD_WARM_UP_TASKS": "2",
    }
    env.pop("REDIS_URL", None)
    shutil.copyfile(migrated_sqlite, db)
    folder = tmp_path / "answers"
    folder.mkdir()
    copy_polled_answers(fixtures_dir / "rest", folder)
    proc = _manage(env, "import_snapshot", str(folder))
    assert proc.returncode == 0, proc.stderr
    snapshot_id = int(proc.stdout.strip())
    assert "warning: the answers carry no capture time" in proc.stderr

    with sqlite3.connect(db) as con:
        stored = con.execute(
            "SELECT count(*) FROM dashboard_clustersnapshot WHERE id = ?", (snapshot_id,)
        ).fetchone()[0]
        spans = con.execute(
            "SELECT count(*) FROM dashboard_allocationspan WHERE first_seen = ?", (snapshot_id,)
        ).fetchone()[0]
    nodes = json.loads((folder / "partition_nodes.json").read_bytes())
    assert stored == 1
    assert spans == sum(len(n.get("allocations") or []) for n in nodes) > 0
    with sqlite3.connect(broker) as con:
        sent = con.execute("SELECT count(*) FROM kombu_message").fetchone()[0]
    assert sent == 2

    (folder / "partition_nodes.json").write_text("[{")
    refused = _manage(env, "import_snapshot", str(folder))
    assert refused.returncode == 1
    assert "partition_nodes.json" in refused.stderr
    assert refused.stdout == ""
