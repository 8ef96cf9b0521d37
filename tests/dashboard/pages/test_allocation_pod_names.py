"""Every page, CSV and API answer naming an allocation gives its pod first
(namespace/name, from the allocation's tags), its key second, and its application's
user: on lab-west (data/cluster-b), whose allocations all carry their pods."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_answers import rest_files
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.services.runs.execution import victims_named

pytestmark = pytest.mark.django_db

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b" / "rest"
GIB = 2**30
#: A pod named first, its key shortened after it (the whole key in the title).
NAMED = re.compile(
    r'<span class="alloc-pod">([^<]+)</span> <span class="mono muted alloc-key" '
    r'title="([^"]+)">([^<]+)</span>'
)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _pods(snap: models.ClusterSnapshot) -> dict[str, str]:
    """The pod of each allocation, as the REST answer's tags give it."""
    nodes = json.loads(rest_files(CLUSTER_B, events=False)["partition_nodes.json"])
    out = {}
    for n in nodes:
        for a in n.get("allocations") or []:
            tags = a.get("allocationTags") or {}
            out[a["allocationKey"]] = (
                f"{tags['kubernetes.io/meta/namespace']}/{tags['kubernetes.io/meta/podName']}"
            )
    assert out
    return out


@pytest.fixture
def etl_run(db: None) -> models.PreemptionRun:
    """A quota what-if on lab-west's root.etl (guaranteed lowered to 2 cores) with victims."""
    files = rest_files(CLUSTER_B, events=False)
    tree = json.loads(files["partition_queues.json"])
    (etl,) = [q for q in tree["children"] if q["queuename"] == "root.etl"]
    etl["guaranteedResource"] = {"vcore": 2000, "memory": 8 * GIB}
    files["partition_queues.json"] = json.dumps(tree).encode()
    snap = services.import_snapshot(files, partition="lab-west")
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snap,
        request={"queue": "root.etl", "new_max": {"vcore": 2000}},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.victims.exists()
    return run


def _named_cells(page: str, testid: str) -> list[tuple[str, str, str]]:
    table = page.split(f'data-testid="{testid}"', 1)[1].split("</table>", 1)[0]
    return NAMED.findall(table)


def test_run_and_whatif_pages_name_victims_by_pod_then_key_then_user(
    viewer: Any, etl_run: models.PreemptionRun
) -> None:
    assert etl_run.snapshot is not None
    pods = _pods(etl_run.snapshot)
    keys = list(etl_run.victims.order_by("position").values_list("allocation_key", flat=True))
    for url in (reverse("run", args=[etl_run.pk]), reverse("whatif") + f"?run={etl_run.pk}"):
        page = _client(viewer).get(url).content.decode()
        named = _named_cells(page, "victims-table")
        assert [key for _, key, _ in named] == keys, url
        assert [pod for pod, _, _ in named] == [pods[k] for k in keys], url
        assert all(short == f"{key[:8]}…" for _, key, short in named), url
        table = page.split('data-testid="victims-table"', 1)[1].split("</table>", 1)[0]
        assert "(etl-bot)" in table, url  # root.etl's applications run as etl-bot


def test_the_api_gives_pod_namespace_and_user_beside_the_key(
    viewer_client: APIClient, etl_run: models.PreemptionRun
) -> None:
    assert etl_run.snapshot is not None
    pods = _pods(etl_run.snapshot)
    victims = viewer_client.get(f"/api/runs/{etl_run.pk}/").json()["victims"]
    assert victims
    for v in victims:
        assert f"{v['namespace']}/{v['pod']}" == pods[v["allocation_key"]]
        assert v["user"] == "etl-bot"
    rows = viewer_client.get(
        f"/api/snapshots/{etl_run.snapshot.pk}/allocations/", {"queue": "root.etl"}
    ).json()["results"]
    assert rows
    for a in rows:
        assert f"{a['namespace']}/{a['pod']}" == pods[a["key"]]
        assert a["user"] == "etl-bot"
        assert {"key", "app", "queue", "node"} <= set(a)  # the fields before stay


def test_history_csv_names_the_victims_pods_and_users(
    viewer: Any, etl_run: models.PreemptionRun
) -> None:
    assert etl_run.snapshot is not None
    pods = _pods(etl_run.snapshot)
    response = _client(viewer).get(reverse("history_csv"))
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    (row,) = [r for r in csv.DictReader(io.StringIO(body)) if r["id"] == str(etl_run.pk)]
    keys = row["victim_keys"].split(" ")
    assert row["victim_pods"].split(" ") == [pods[k] for k in keys]
    assert row["victim_users"] == "etl-bot"


def test_an_alert_names_predicted_victims_by_pod(etl_run: models.PreemptionRun) -> None:
    assert etl_run.snapshot is not None
    pods = _pods(etl_run.snapshot)
    key = etl_run.victims.order_by("position").values_list("allocation_key", flat=True)[0]
    said = victims_named(etl_run.snapshot, [{"allocation_key": key}])
    assert said == f"{pods[key]} ({key[:8]}…, user etl-bot)"


def test_snapshot_pages_name_allocations_by_pod(viewer: Any, etl_run: models.PreemptionRun) -> None:
    snap = etl_run.snapshot
    assert snap is not None
    pods = _pods(snap)
    scope = {"partition": "lab-west", "snapshot": str(snap.pk)}
    client = _client(viewer)
    pages = {
        "allocations": client.get(reverse("queue"), {**scope, "queue": "root.etl"}),
        "candidates": client.get(reverse("victims"), {**scope, "queue": "root.etl"}),
        "app-allocations": client.get(
            reverse("application"),
            {**scope, "app": services.snapshot_allocations(snap).filter(queue="root.etl")[0].app},
        ),
        "node-allocations": client.get(
            reverse("nodes"),
            {**scope, "node": services.snapshot_allocations(snap).filter(queue="root.etl")[0].node},
        ),
    }
    for testid, response in pages.items():
        named = _named_cells(response.content.decode(), testid)
        assert named, testid
        assert all(pods[key] == pod for pod, key, _ in named), testid
    # the queue page's search finds an allocation by its pod's name
    pod = next(p for k, p in pods.items() if p.startswith("etl/"))
    found = client.get(reverse("queue"), {**scope, "queue": "root.etl", "q": pod.split("/")[1]})
    assert [p for p, _, _ in _named_cells(found.content.decode(), "allocations")] == [pod]


def test_the_plan_api_names_its_victims_by_pod(staff: Any) -> None:
    """A proposed config lowering root.etl's max on lab-west: each victim of the plan
    answer carries its pod, namespace and user beside its key."""
    snap = services.import_snapshot(rest_files(CLUSTER_B, events=False))
    pods = _pods(snap)
    config = (CLUSTER_B.parent / "config" / "queues.yaml").read_text()
    proposed = config.replace(
        "max: {vcore: 8, memory: 48Gi}", "max: {vcore: 3, memory: 48Gi}"
    ).replace("guaranteed: {vcore: 8, memory: 32Gi}", "guaranteed: {vcore: 1, memory: 8Gi}")
    assert proposed != config
    client = APIClient()
    client.force_authenticate(staff)
    body = client.post(
        "/api/plans/",
        {"text": proposed, "partition": "default", "cluster": snap.partition.cluster.name},
        format="json",
    ).json()
    details = [v for c in body["changes"] for v in c.get("victim_details") or []]
    assert details, json.dumps(body)[:1500]
    for v in details:
        assert f"{v['namespace']}/{v['pod']}" == pods[v["key"]]
        assert v["user"]
