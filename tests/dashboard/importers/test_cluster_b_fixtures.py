"""The second cluster's fixtures (data/cluster-b, "lab-west") agree with themselves.

The REST answers are written by the folder's generate.py; these tests check that the
stored files are exactly what it writes and that every sum, key and time agrees across
files, so tests built on them compare against figures the scheduler would report.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b"
REST = CLUSTER_B / "rest"


def load(name: str) -> Any:
    return json.loads((REST / name).read_text())


def walk(queue: dict[str, Any]) -> list[dict[str, Any]]:
    out = [queue]
    for child in queue.get("children", []):
        out.extend(walk(child))
    return out


def add(acc: dict[str, int], res: dict[str, int]) -> None:
    for t, q in res.items():
        acc[t] = acc.get(t, 0) + q


def test_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("cluster_b_generate", CLUSTER_B / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "rest").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "queues.yaml").write_text((CLUSTER_B / "config/queues.yaml").read_text())
    module.HERE = tmp_path  # type: ignore[attr-defined]
    module.main()
    written_config = (tmp_path / "config" / "config.json").read_text()
    assert written_config == (CLUSTER_B / "config" / "config.json").read_text()
    for written in sorted((tmp_path / "rest").iterdir()):
        assert written.read_text() == (REST / written.name).read_text(), written.name
    assert sorted(p.name for p in (tmp_path / "rest").iterdir()) == sorted(
        p.name for p in REST.iterdir()
    )


@pytest.mark.parametrize("name", sorted(p.name for p in REST.glob("*.json")))
def test_answers_are_one_compact_line(name: str) -> None:
    text = (REST / name).read_text()
    assert text == json.dumps(json.loads(text), separators=(",", ":")) + "\n"


def test_queue_sums_equal_the_allocations_on_the_nodes() -> None:
    nodes = load("partition_nodes.json")
    apps = {a["applicationID"]: a for a in load("partition_applications_active.json")}
    allocated: dict[str, dict[str, int]] = {}
    preempting: dict[str, dict[str, int]] = {}
    for node in nodes:
        node_sum: dict[str, int] = {}
        for a in node["allocations"]:
            add(node_sum, a["resource"])
            queue = apps[a["applicationId"]]["queueName"]
            parts = queue.split(".")
            for i in range(1, len(parts) + 1):
                add(allocated.setdefault(".".join(parts[:i]), {}), a["resource"])
                if a.get("preempted"):
                    add(preempting.setdefault(".".join(parts[:i]), {}), a["resource"])
        assert node["allocated"] == node_sum
        foreign: dict[str, int] = {}
        for f in node.get("foreignAllocations", []):
            add(foreign, f["resource"])
        assert node.get("occupied", {}) == foreign
    for q in walk(load("partition_queues.json")):
        path = q["queuename"]
        assert q.get("allocatedResource", {}) == allocated.get(path, {}), path
        assert q.get("preemptingResource", {}) == preempting.get(path, {}), path


def test_the_story_is_in_the_answers() -> None:
    queues = {q["queuename"]: q for q in walk(load("partition_queues.json"))}
    assert queues["root"]["partition"] == "default"
    assert queues["root.legacy"]["status"] == "Draining"
    assert queues["root.tenants.team-x"]["isManaged"] is False
    etl = queues["root.etl"]
    assert etl["maxResource"]["vcore"] == etl["guaranteedResource"]["vcore"]
    assert etl["quotaPreemptionDelay"] == "10m0s"
    assert (etl["maxRunningApps"], etl["runningApps"]) == (3, 2)
    sandbox = queues["root.sandbox"]
    assert sandbox["allocatedResource"] == sandbox["preemptingResource"]
    assert load("partitions.json")[0]["clusterId"] == "lab-west"
    placeholders = [
        a for n in load("partition_nodes.json") for a in n["allocations"] if a.get("placeholder")
    ]
    assert {a["taskGroupName"] for a in placeholders} == {"spark-executor"}
    assert len(placeholders) == 2


def test_events_agree_with_the_other_answers() -> None:
    batch = load("events_batch.json")
    records = batch["EventRecords"]
    assert batch["HighestID"] == 48100 + len(records) - 1
    times = [r["timestampNano"] for r in records]
    assert times == sorted(times)
    keys = {a["allocationKey"]: a for n in load("partition_nodes.json") for a in n["allocations"]}
    quota = [r for r in records if r.get("message", "").startswith("Preempted by Quota")]
    assert len(quota) == 2
    for r in quota:
        victim = keys[r["objectID"]]
        assert victim["preempted"] is True
        assert {t: v["value"] for t, v in r["resource"]["resources"].items()} == victim["resource"]
    summary = next(r for r in records if r.get("eventChangeDetail") == 407)
    assert "claimed resources: map[memory:4294967296 pods:2 vcore:2000]" in summary["message"]
    last_max = [r for r in records if r.get("eventChangeDetail") == 403][-1]
    reports = next(
        q for q in walk(load("partition_queues.json")) if q["queuename"] == "root.reports"
    )
    assert reports["maxResource"] == {
        t: v["value"] for t, v in last_max["resource"]["resources"].items()
    }
    assert reports["quotaPreemptionStartTime"] == last_max["timestampNano"] // 10**9 * 10**9 + (
        20 * 60 * 10**9
    )
