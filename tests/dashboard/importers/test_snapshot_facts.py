"""What YuniKorn reports, kept in the imported scenario as extra keys (dashboard.importers.facts).

On both clusters (the shared acme-ml REST answers and state dump, and lab-west in
data/cluster-b) every figure kept equals the scheduler's answers exactly, and
``python -m engine`` answers the same with or without the extra keys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_answers import load, nonzero, rest_files, rest_folder, rest_queues

from dashboard.importers import SnapshotImport, parse_snapshot, scenario_json

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b" / "rest"
REPO = Path(__file__).resolve().parents[3]
# the capture times the fixtures' READMEs give (REST answers carry none; the engine
# would otherwise take the wall clock as "now")
CAPTURED = {"acme-ml": 1788256800.0, "lab-west": 1791986400.0}

CONTRACT = {
    "top": ("now", "partition", "queues", "nodes", "allocations", "request"),
    "queue": ("name", "max", "guaranteed", "properties", "quota_preemption_delay", "children"),
    "node": ("id", "capacity", "schedulable"),
    "allocation": (
        "key", "app", "queue", "node", "resources", "priority", "originator",
        "allow_preemption", "created", "required_node", "preempted",
    ),
}  # fmt: skip


@pytest.fixture(params=["acme-ml", "lab-west"])
def cluster(request: pytest.FixtureRequest, fixtures_dir: Path) -> tuple[Path, SnapshotImport]:
    folder = rest_folder(request.param, fixtures_dir)
    return folder, parse_snapshot(rest_files(folder))


def scenario_queues(scenario: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    stack = [("root", scenario["queues"])]
    while stack:
        path, q = stack.pop()
        yield path, q
        stack.extend((f"{path}.{c['name']}", c) for c in q.get("children", []))


def add(acc: dict[str, int], r: dict[str, int]) -> None:
    for t, q in r.items():
        acc[t] = acc.get(t, 0) + q


def test_queue_figures_equal_the_rest_answers(cluster: tuple[Path, SnapshotImport]) -> None:
    folder, snap = cluster
    reported = rest_queues(folder)
    queues = dict(scenario_queues(snap.scenario))
    assert set(queues) == set(reported)
    for path, q in queues.items():
        r = reported[path]
        assert q["allocated"] == nonzero(r.get("allocatedResource")), path
        assert q["preempting"] == nonzero(r.get("preemptingResource")), path
        assert q["remaining"] == {
            t: v - q["preempting"].get(t, 0) for t, v in q["allocated"].items()
        }
        assert q["status"] == r["status"]
        assert q["is_managed"] is (
            r["isManaged"]
            and all(
                reported[".".join(path.split(".")[:i])]["isManaged"]
                for i in range(1, path.count(".") + 1)
            )
        )
        assert q["dynamic"] is not q["is_managed"]
        assert q["running_apps"] == r.get("runningApps", 0)
        assert q.get("max_applications") == r.get("maxRunningApps")
        if "quotaPreemptionStartTime" in r:
            assert q["quota_preemption_start"] == r["quotaPreemptionStartTime"] / 1e9


def test_allocations_sum_to_what_the_queues_report(cluster: tuple[Path, SnapshotImport]) -> None:
    _, snap = cluster
    allocated: dict[str, dict[str, int]] = {}
    preempting: dict[str, dict[str, int]] = {}
    for a in snap.scenario["allocations"]:
        parts = a["queue"].split(".")
        for i in range(1, len(parts) + 1):
            add(allocated.setdefault(".".join(parts[:i]), {}), a["resources"])
            if a["preempted"]:
                add(preempting.setdefault(".".join(parts[:i]), {}), a["resources"])
    for path, q in scenario_queues(snap.scenario):
        assert q["allocated"] == nonzero(allocated.get(path)), path
        assert q["preempting"] == nonzero(preempting.get(path)), path


def test_nodes_keep_reported_capacity_and_foreign_pods(
    cluster: tuple[Path, SnapshotImport],
) -> None:
    folder, snap = cluster
    reported = {n["nodeID"]: n for n in load(folder, "partition_nodes.json")}
    total: dict[str, int] = {}
    for node in snap.scenario["nodes"]:
        r = reported[node["id"]]
        assert node["reported_capacity"] == r["capacity"]
        assert node["occupied"] == r.get("occupied", {})
        foreign: dict[str, int] = {}
        for pod in node["foreign_pods"]:
            add(foreign, pod["resources"])
        assert foreign == node["occupied"]
        assert len(node["foreign_pods"]) == len(r.get("foreignAllocations", []))
        assert node["capacity"] == {
            t: q - node["occupied"].get(t, 0) for t, q in node["reported_capacity"].items()
        }
        add(total, node["reported_capacity"])
    (partition,) = load(folder, "partitions.json")
    assert total == partition["capacity"]["capacity"]
    root = snap.scenario["queues"]
    assert root["allocated"] == partition["capacity"]["usedCapacity"]
    assert snap.scenario["cluster_id"] == partition["clusterId"]
    assert snap.scenario["captured_at"] is None  # REST answers carry no capture time


def test_cluster_b_facts() -> None:
    snap = parse_snapshot(rest_files(CLUSTER_B))
    queues = dict(scenario_queues(snap.scenario))
    sandbox = queues["root.sandbox"]
    assert sandbox["remaining"] == {"memory": 0, "pods": 0, "vcore": 0}  # types kept
    assert snap.queue_usage["root.sandbox"]["remaining"] == sandbox["remaining"]
    assert queues["root.legacy"]["status"] == "Draining"
    assert queues["root.tenants.team-x"]["dynamic"] is True
    assert (queues["root.etl"]["max_applications"], queues["root.etl"]["running_apps"]) == (3, 2)
    reports = queues["root.reports"]
    assert reports["quota_preemption_start"] == 1791987480.0  # 13:58:00 + 20m
    assert reports["quota_preemption_running"] is False
    placeholders = [a for a in snap.scenario["allocations"] if a.get("placeholder")]
    assert {a["task_group"] for a in placeholders} == {"spark-executor"}
    assert len(placeholders) == 2
    (driver,) = [a for a in snap.scenario["allocations"] if a.get("placeholder_used")]
    assert (driver["task_group"], driver["originator"]) == ("spark-driver", True)


def test_state_dump_has_its_capture_time(fixtures_dir: Path) -> None:
    dump = fixtures_dir / "rest" / "fullstatedump.json"
    snap = parse_snapshot({dump.name: dump.read_bytes()})
    assert snap.scenario["captured_at"] == json.loads(dump.read_bytes())["timestamp"] / 1e9
    assert snap.scenario["cluster_id"] == snap.cluster_id


def contract_only(doc: dict[str, Any]) -> dict[str, Any]:
    def queue(q: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in q.items() if k in CONTRACT["queue"] and k != "children"}
        if q.get("children"):
            out["children"] = [queue(c) for c in q["children"]]
        return out

    out = {k: v for k, v in doc.items() if k in CONTRACT["top"]}
    out["queues"] = queue(doc["queues"])
    out["nodes"] = [{k: v for k, v in n.items() if k in CONTRACT["node"]} for n in doc["nodes"]]
    out["allocations"] = [
        {k: v for k, v in a.items() if k in CONTRACT["allocation"]} for a in doc["allocations"]
    ]
    return out


def engine(doc: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "-"],
        input=json.dumps(doc).encode(),
        capture_output=True,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize(
    ("which", "request_doc"),
    [
        ("acme-ml", {"type": "quota_change", "queue": "root.batch", "new_max": {"vcore": 8000}}),
        (
            "lab-west",
            {"type": "quota_change", "queue": "root.reports", "new_max": {"vcore": 11000}},
        ),
        ("lab-west", {"type": "resources", "queue": "root.sandbox"}),
    ],
)
@pytest.mark.subprocess
def test_engine_ignores_the_extra_keys(
    fixtures_dir: Path, which: str, request_doc: dict[str, Any]
) -> None:
    folder = rest_folder(which, fixtures_dir)
    snap = parse_snapshot(rest_files(folder))
    full = scenario_json({**snap.scenario, "now": CAPTURED[which]}, request_doc)
    bare = contract_only(full)
    assert bare != full  # the extra keys are there
    assert engine(full) == engine(bare)


@pytest.mark.subprocess
def test_engine_ignores_the_extra_keys_for_an_ask(fixtures_dir: Path) -> None:
    snap = parse_snapshot(rest_files(CLUSTER_B))
    (ask,) = snap.asks
    request_doc = {
        "type": "preempt",
        "ask": {k: ask[k] for k in ("key", "app", "queue", "resources", "priority", "created")},
    }
    full = scenario_json({**snap.scenario, "now": CAPTURED["lab-west"]}, request_doc)
    answer = engine(full)
    assert answer == engine(contract_only(full))
    assert answer["status"] in ("preempted", "fits", "not_possible")
