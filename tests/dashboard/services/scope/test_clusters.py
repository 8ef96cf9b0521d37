"""Two clusters side by side (the commands' defaults with no cluster or one: in
test_cluster_defaults.py): acme-ml (the shared fixtures, clusterId ``mycluster``) and
lab-west (data/cluster-b), both with partition ``default``.  Imports go to the cluster
named (or the answers' clusterId), the API and pages show each one alone, an unknown
cluster is an error naming the clusters there are."""

from __future__ import annotations

import html as html_mod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError
from django.db import transaction
from django.urls import reverse
from rest_framework.test import APIClient
from two_clusters import LAB_WEST, acme_folder, import_two, logged_in, manage

from dashboard import models, services
from dashboard.services.engine_state_cache import forget_engine_states
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

FIXTURES = Path(settings.DASHBOARD_FIXTURES_DIR)


@pytest.fixture
def acme_dir(fixtures_dir: Path, tmp_path: Path) -> Path:
    """The shared acme-ml fixtures as ``two`` imports them (see two_clusters.acme_folder)."""
    return acme_folder(fixtures_dir, tmp_path / "acme")


@pytest.fixture(scope="module")
def _two_imported(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Both clusters imported once for the module, inside a transaction rolled back after
    it: each test runs in a savepoint of it (pytest-django's ``db``), so what a test
    writes is undone before the next one (as the reliability suites' data)."""
    acme = acme_folder(FIXTURES, tmp_path_factory.mktemp("two") / "acme")
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            import_two(acme / "config" / "queues-small.yaml", acme / "rest")
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def two(db: None, _two_imported: None) -> dict[str, models.Partition]:
    """Both clusters' configs and REST folders, imported with the commands: the
    partitions by cluster name, read afresh for this test."""
    forget_engine_states()  # states cached by snapshot id would outlive a test's writes
    return {p.cluster.name: p for p in models.Partition.objects.select_related("cluster")}


# ------------------------------------------------------------------------------ imports


def test_imports_go_to_their_clusters(two: dict[str, models.Partition]) -> None:
    assert sorted(two) == ["acme-ml", "lab-west"]
    acme, lab = two["acme-ml"], two["lab-west"]
    assert (acme.name, lab.name) == ("default", "default")
    assert acme.pk != lab.pk
    assert [c.filename for c in acme.configs.all()] == ["queues-small.yaml"]
    assert [c.filename for c in lab.configs.all()] == ["queues.yaml"]
    (acme_snap,) = acme.snapshots.all()
    (lab_snap,) = lab.snapshots.all()
    acme_nodes = {n.node_id for n in services.snapshot_nodes(acme_snap)}
    lab_nodes = {n.node_id for n in services.snapshot_nodes(lab_snap)}
    assert acme_nodes
    assert acme_nodes != lab_nodes
    assert lab_nodes == {"node-a", "node-b", "node-c"}
    # the cluster named on the command line learns the scheduler's clusterId
    assert models.Cluster.objects.get(name="acme-ml").cluster_id == "mycluster"
    assert models.Cluster.objects.get(name="lab-west").cluster_id == "lab-west"
    # each cluster's events became its own observed runs
    observed = models.PreemptionRun.objects.filter(trigger="observed")
    assert observed.filter(partition=acme).exists()
    assert observed.filter(partition=lab).exists()
    assert set(observed.values_list("partition_id", flat=True)) == {acme.pk, lab.pk}


def test_a_later_snapshot_finds_its_cluster_by_the_learnt_cluster_id(
    two: dict[str, models.Partition], acme_dir: Path
) -> None:
    manage("import_snapshot", str(acme_dir / "rest"))
    assert two["acme-ml"].snapshots.count() == 2
    assert two["lab-west"].snapshots.count() == 1
    assert models.Cluster.objects.count() == 2


def test_answers_of_another_scheduler_are_refused_in_a_cluster(
    two: dict[str, models.Partition], acme_dir: Path
) -> None:
    """acme-ml has learnt clusterId mycluster: lab-west's answers do not mix into it."""
    before = models.ClusterSnapshot.objects.count()
    with pytest.raises(CommandError) as refused:
        manage("import_snapshot", str(LAB_WEST / "rest"), "--cluster", "acme-ml")
    assert (
        "the answers are of the scheduler with clusterId 'lab-west', but cluster 'acme-ml' "
        "holds the state of clusterId 'mycluster'"
    ) in str(refused.value)
    assert models.ClusterSnapshot.objects.count() == before


def test_a_config_naming_no_cluster_is_refused_when_there_are_several(
    two: dict[str, models.Partition],
) -> None:
    before = models.ConfigVersion.objects.count()
    with pytest.raises(CommandError) as refused:
        manage("import_config", str(LAB_WEST / "config" / "queues-v2.yaml"))
    message = str(refused.value)
    assert "there are 2 clusters (acme-ml, lab-west)" in message
    assert "name the cluster" in message
    assert models.ConfigVersion.objects.count() == before


def test_a_bad_cluster_name_is_refused(two: dict[str, models.Partition]) -> None:
    with pytest.raises(CommandError) as refused:
        manage("import_config", str(LAB_WEST / "config" / "queues-v2.yaml"), "--cluster", "a b")
    assert "'a b' is not a cluster name" in str(refused.value)
    assert models.Cluster.objects.count() == 2


def test_the_import_job_keeps_the_cluster(two: dict[str, models.Partition], staff: Any) -> None:
    data = (LAB_WEST / "config" / "queues-v2.yaml").read_bytes()
    job = services.queue_config_import(data, filename="queues-v2.yaml", cluster="lab-west")
    services.run_import_job(job.pk)
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert two["lab-west"].configs.count() == 2
    assert two["acme-ml"].configs.count() == 1


# ------------------------------------------------------------------------------ API


def test_api_lists_each_cluster_alone(
    two: dict[str, models.Partition], viewer_client: APIClient
) -> None:
    partitions = viewer_client.get("/api/partitions/").json()["results"]
    assert sorted((p["cluster"], p["name"]) for p in partitions) == [
        ("acme-ml", "default"),
        ("lab-west", "default"),
    ]
    for name, partition in two.items():
        snaps = viewer_client.get("/api/snapshots/", {"cluster": name}).json()["results"]
        assert [s["id"] for s in snaps] == [partition.snapshots.get().pk]
        assert {(s["cluster"], s["partition"]) for s in snaps} == {(name, "default")}
        configs = viewer_client.get(
            "/api/configs/", {"cluster": name, "partition": "default"}
        ).json()["results"]
        assert {c["cluster"] for c in configs} == {name}
        runs = viewer_client.get("/api/runs/", {"cluster": name, "trigger": "observed"}).json()
        assert runs["count"] == partition.runs.filter(trigger="observed").count() > 0
        assert {r["cluster"] for r in runs["results"]} == {name}
        alerts = viewer_client.get("/api/alerts/", {"cluster": name}).json()["results"]
        assert {a["cluster"] for a in alerts} <= {name}
    both = viewer_client.get("/api/snapshots/", {"partition": "default"}).json()
    assert both["count"] == 2


def test_api_lists_the_clusters_with_their_partitions(
    two: dict[str, models.Partition], viewer_client: APIClient
) -> None:
    answer = viewer_client.get("/api/clusters/")
    assert answer.status_code == 200
    clusters = {c["name"]: c for c in answer.json()["results"]}
    assert sorted(clusters) == ["acme-ml", "lab-west"]
    for name, partition in two.items():
        assert clusters[name]["partitions"] == ["default"]
        assert clusters[name]["cluster_id"] == partition.cluster.cluster_id
        one = viewer_client.get(f"/api/clusters/{clusters[name]['id']}/").json()
        assert one == clusters[name]
    assert clusters["lab-west"]["cluster_id"] == "lab-west"
    assert viewer_client.post("/api/clusters/", {"name": "x"}).status_code in (403, 405)


@pytest.mark.parametrize(
    "url", ["/api/snapshots/", "/api/configs/", "/api/runs/", "/api/partitions/", "/api/alerts/"]
)
def test_api_unknown_cluster_is_400_naming_the_clusters(
    two: dict[str, models.Partition], viewer_client: APIClient, url: str
) -> None:
    response = viewer_client.get(url, {"cluster": "nope"})
    assert response.status_code == 400
    assert response.json() == {
        "cluster": ["there is no cluster 'nope' (clusters: acme-ml, lab-west)"]
    }


def test_api_uploads_select_the_cluster(
    two: dict[str, models.Partition], staff_client: APIClient, acme_dir: Path
) -> None:
    config = SimpleUploadedFile("v2.yaml", (LAB_WEST / "config" / "queues-v2.yaml").read_bytes())
    response = staff_client.post("/api/configs/", {"file": config, "cluster": "lab-west"})
    assert response.status_code == 201, response.json()
    assert [(v["cluster"], v["partition"]) for v in response.json()["versions"]] == [
        ("lab-west", "default")
    ]
    nameless = SimpleUploadedFile("v2.yaml", (LAB_WEST / "config" / "queues-v2.yaml").read_bytes())
    refused = staff_client.post("/api/configs/", {"file": nameless})
    assert refused.status_code == 400
    assert "acme-ml, lab-west" in refused.json()["cluster"][0]
    files = [
        SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted((LAB_WEST / "rest").glob("*"))
    ]
    snap = staff_client.post("/api/snapshots/", {"files": files, "cluster": "lab-west-copy"})
    assert snap.status_code == 201, snap.json()
    assert (snap.json()["cluster"], snap.json()["partition"]) == ("lab-west-copy", "default")
    assert models.Cluster.objects.count() == 3


def test_api_quota_change_names_the_cluster(
    two: dict[str, models.Partition], staff_client: APIClient
) -> None:
    body = {"partition": "default", "queue_path": "root.reports", "new_delay": 600}
    ambiguous = staff_client.post("/api/quota-changes/", body, format="json")
    assert ambiguous.status_code == 400
    assert "exists in 2 clusters (acme-ml, lab-west)" in ambiguous.json()["cluster"][0]
    response = staff_client.post(
        "/api/quota-changes/", {**body, "cluster": "lab-west"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert (response.json()["cluster"], response.json()["partition"]) == ("lab-west", "default")
    assert two["lab-west"].changes.filter(queue_path="root.reports", new_delay=600).exists()
    assert not two["acme-ml"].changes.filter(queue_path="root.reports").exists()


def test_api_plans_select_the_cluster(
    two: dict[str, models.Partition], staff_client: APIClient
) -> None:
    text = (LAB_WEST / "config" / "queues-v2.yaml").read_text()
    ambiguous = staff_client.post("/api/plans/", {"text": text}, format="json")
    assert ambiguous.status_code == 400
    assert "name the cluster" in ambiguous.json()["cluster"][0]
    plan = staff_client.post("/api/plans/", {"text": text, "cluster": "lab-west"}, format="json")
    assert plan.status_code == 200, plan.json()
    assert plan.json()["has_snapshot"] is True
    unknown = staff_client.post("/api/plans/", {"text": text, "cluster": "nope"}, format="json")
    assert unknown.status_code == 400
    assert "no cluster 'nope'" in unknown.json()["cluster"][0]


def test_api_sources_belong_to_a_cluster(
    two: dict[str, models.Partition], staff_client: APIClient
) -> None:
    body = {"name": "lab", "base_url": "http://lab-west.example:9080", "partition": "default"}
    nameless = staff_client.post("/api/sources/", body, format="json")
    assert nameless.status_code == 400
    assert "acme-ml, lab-west" in nameless.json()["cluster"][0]
    lab = staff_client.post("/api/sources/", {**body, "cluster": "lab-west"}, format="json")
    assert lab.status_code == 201, lab.json()
    assert lab.json()["cluster"] == "lab-west"
    acme = staff_client.post(
        "/api/sources/",
        {**body, "name": "acme", "base_url": "http://acme.example:9080", "cluster": "acme-ml"},
        format="json",
    )
    assert acme.status_code == 201, acme.json()
    again = staff_client.post(
        "/api/sources/",
        {**body, "name": "lab2", "base_url": "http://lab2.example:9080", "cluster": "lab-west"},
        format="json",
    )
    assert again.status_code == 400
    assert "lab-west already has a source for partition default" in again.json()["partition"][0]
    listed = staff_client.get("/api/sources/", {"cluster": "acme-ml"}).json()["results"]
    assert [s["name"] for s in listed] == ["acme"]
    assert ClusterSource.objects.get(name="lab").cluster.name == "lab-west"


# ------------------------------------------------------------------------------ pages


def test_pages_show_each_cluster_alone(two: dict[str, models.Partition], viewer: Any) -> None:
    client = logged_in(viewer)
    for name, partition in two.items():
        snapshot = partition.snapshots.get()
        page = client.get(reverse("tree"), {"cluster": name, "partition": "default"})
        assert page.status_code == 200
        html = page.content.decode()
        assert 'data-testid="cluster-switcher"' in html
        assert f'<option value="{name}" selected>{name}</option>' in html
        assert f'<option value="{snapshot.pk}" selected>' in html
        other = next(p for n, p in two.items() if n != name).snapshots.get()
        assert f">#{other.pk} · " not in html  # the other cluster's snapshot
        history = client.get(reverse("history"), {"cluster": name}).content.decode()
        for run in models.PreemptionRun.objects.filter(trigger="observed"):
            link = f'href="{reverse("run", args=[run.pk])}"'
            assert (link in history) == (run.partition_id == partition.pk)


def test_pages_answer_an_unknown_cluster_with_a_404(
    two: dict[str, models.Partition], viewer: Any
) -> None:
    page = logged_in(viewer).get(reverse("tree"), {"cluster": "nope"})
    assert page.status_code == 404
    assert "There is no cluster named 'nope'." in html_mod.unescape(page.content.decode())


def test_pages_ask_for_the_cluster_of_a_shared_partition_name(
    two: dict[str, models.Partition], viewer: Any
) -> None:
    page = logged_in(viewer).get(reverse("tree"), {"partition": "default"})
    assert page.status_code == 404
    text = html_mod.unescape(page.content.decode())
    assert "Partition 'default' exists in clusters acme-ml, lab-west: choose the cluster." in text


def test_pages_snapshot_of_another_cluster_is_a_404(
    two: dict[str, models.Partition], viewer: Any
) -> None:
    lab_snapshot = two["lab-west"].snapshots.get()
    page = logged_in(viewer).get(
        reverse("tree"), {"cluster": "acme-ml", "snapshot": str(lab_snapshot.pk)}
    )
    assert page.status_code == 404
    assert f"Snapshot {lab_snapshot.pk} belongs to cluster 'lab-west'" in html_mod.unescape(
        page.content.decode()
    )


def test_import_page_uploads_into_the_named_cluster(
    two: dict[str, models.Partition], staff: Any
) -> None:
    client = logged_in(staff)
    upload = SimpleUploadedFile("v2.yaml", (LAB_WEST / "config" / "queues-v2.yaml").read_bytes())
    response = client.post(
        reverse("import"), {"kind": "config", "cluster": "lab-west", "upload": upload}
    )
    assert response.status_code == 302
    assert two["lab-west"].configs.count() == 2
    page = client.get(reverse("import")).content.decode()
    assert 'name="cluster"' in page


def test_plan_page_plans_against_the_chosen_cluster(
    two: dict[str, models.Partition], staff: Any
) -> None:
    client = logged_in(staff)
    form = client.get(reverse("plan"), {"cluster": "lab-west", "partition": "default"})
    html = form.content.decode()
    assert '<option value="lab-west/default" selected>' in html
    assert '<option value="acme-ml/default">' in html
    assert "?cluster=lab-west&amp;partition=default&amp;edit=current" in html
    current = client.get(
        reverse("plan"), {"cluster": "lab-west", "partition": "default", "edit": "current"}
    ).content.decode()
    first_line = html_mod.escape(two["lab-west"].configs.get().text.splitlines()[0])
    assert "lab-west" in first_line
    assert first_line in current
    acme = client.get(
        reverse("plan"), {"cluster": "acme-ml", "partition": "default", "edit": "current"}
    ).content.decode()
    assert first_line not in acme
    text = (LAB_WEST / "config" / "queues-v2.yaml").read_text()
    planned = client.post(
        reverse("plan"), {"partition": "lab-west/default", "text": text, "action": "keep"}
    )
    assert planned.status_code == 302
    assert two["lab-west"].configs.filter(planned=True).count() == 1
    assert two["acme-ml"].configs.filter(planned=True).count() == 0
