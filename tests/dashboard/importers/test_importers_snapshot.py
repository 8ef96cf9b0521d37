"""dashboard.importers.snapshot: the acme-ml story from REST files, the state dump and scenarios."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from shared_fixtures import FIXTURES

from dashboard.importers import ImportFailure, SnapshotImport, parse_snapshot, scenario_json
from dashboard.importers.snapshot import MAX_SNAPSHOT_BYTES
from engine.queues import build_snapshot
from engine.scenario import parse_scenario

REST = FIXTURES / "rest"
GI = 2**30

PREEMPTED = {  # the GPU notebook (victim of the training worker) and the two ad-hoc executors
    "4dd504dc-9b5b-507e-a311-f82b7a2cb4dc",
    "61c627cf-f498-5eca-8f51-53dad0540f7c",
    "9fc30366-04e6-5707-ba1c-345ee30643cf",
}
OPTED_OUT = {  # adhoc driver (pod annotation) and both llm-serving pods (PriorityClass)
    "348f65e2-c093-503e-a944-090a0278e003",
    "6987a7f0-883f-5268-bb65-e94c26a0c19c",
    "25819df2-4195-538d-ab36-b5f69c1269e6",
}


def rest_files(*, dump: bool = False) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(REST.glob("*.json"))
        if dump or p.name != "fullstatedump.json"
    }


@lru_cache(maxsize=1)
def rest_import() -> SnapshotImport:
    return parse_snapshot(rest_files())


@lru_cache(maxsize=1)
def dump_import() -> SnapshotImport:
    return parse_snapshot({"fullstatedump.json": (REST / "fullstatedump.json").read_bytes()})


def engine_snapshot(imp: SnapshotImport) -> Any:
    doc = scenario_json(imp.scenario, {"type": "resources", "queue": "root"})
    return build_snapshot(parse_scenario(doc).cluster)


def allocations(imp: SnapshotImport) -> dict[str, dict[str, Any]]:
    return {a["key"]: a for a in imp.scenario["allocations"]}


@pytest.mark.parametrize("which", ["rest", "dump"])
def test_acme_ml_counts(which: str) -> None:
    """19 allocations on 3 nodes, 1 pending ask, 8 applications (7 running, 1 completed)."""
    imp = rest_import() if which == "rest" else dump_import()
    assert imp.partition == "default"
    assert imp.cluster_id == "mycluster"
    assert len(imp.scenario["allocations"]) == 19
    assert [n["id"] for n in imp.scenario["nodes"]] == [
        "worker-cpu-1",
        "worker-cpu-2",
        "worker-gpu-1",
    ]
    assert len(imp.asks) == 1
    states = sorted(a["state"] for a in imp.applications)
    assert states == ["Completed"] + ["Running"] * 7
    assert imp.scenario["partition"] == {"quota_preemption_enabled": True, "miss": 0.0}


def test_rest_kind_and_time() -> None:
    """REST files carry no capture time; the state dump does (nanoseconds)."""
    assert rest_import().kind == "rest"
    assert rest_import().captured_at is None
    assert "now" not in rest_import().scenario
    assert dump_import().kind == "statedump"
    assert dump_import().captured_at == pytest.approx(1788256800.214551009)
    assert dump_import().scenario["now"] == dump_import().captured_at


def test_preempted_allocations_kept_and_subtracted() -> None:
    """Preempted allocations stay (preempted: true); usage subtracts them: batch 12000 - 2000."""
    imp = rest_import()
    assert {k for k, a in allocations(imp).items() if a["preempted"]} == PREEMPTED
    snap = engine_snapshot(imp)
    assert snap.allocated("root.batch") == {"memory": 46 * GI, "pods": 8, "vcore": 12000}
    assert snap.preempting("root.batch") == {"memory": 8 * GI, "pods": 2, "vcore": 2000}
    assert snap.usage("root.batch") == {"memory": 38 * GI, "pods": 6, "vcore": 10000}
    # the proposed change's reclaim figures (README): research uses 8 cores and 32Gi
    assert snap.usage("root.research") == {"memory": 32 * GI, "pods": 4, "vcore": 8000}
    usage = imp.queue_usage["root.batch"]
    assert usage["allocated"]["vcore"] == 12000
    assert usage["preempting"]["vcore"] == 2000
    assert usage["usage"]["vcore"] == 10000
    assert usage["headroom"]["vcore"] == -2000
    assert usage["max"] == {"memory": 48 * GI, "vcore": 10000}


def test_required_node_daemonset_pods() -> None:
    """The three node-exporter pods carry the requiredNode tag: required_node true."""
    imp = rest_import()
    required = [a for a in imp.scenario["allocations"] if a["required_node"]]
    assert sorted(a["pod"] for a in required) == [
        "monitoring/node-exporter-7xk2p",
        "monitoring/node-exporter-b9wq4",
        "monitoring/node-exporter-lz5rd",
    ]
    assert {a["queue"] for a in required} == {"root.monitoring"}
    assert sorted(a["node"] for a in required) == ["worker-cpu-1", "worker-cpu-2", "worker-gpu-1"]


def test_originators_and_string_priorities() -> None:
    """Only the Spark drivers are originators; priority "-10" becomes -10."""
    allocs = allocations(rest_import())
    drivers = sorted(a["pod"] for a in allocs.values() if a["originator"])
    assert drivers == ["analytics/adhoc-report-77c2-driver", "data-eng/etl-nightly-4b1e-driver"]
    adhoc = [a for a in allocs.values() if a["app"] == "spark-9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49"]
    assert {a["priority"] for a in adhoc} == {-10}
    assert allocs["1d64fd47-aeb1-56c7-903b-79acfc13b096"]["priority"] == 2000001000


def test_pending_ask() -> None:
    """The training worker is pending and has triggered preemption."""
    (ask,) = rest_import().asks
    assert ask["key"] == "0561dd16-bf2d-5231-b2cf-650f76e87d42"
    assert ask["queue"] == "root.production.training"
    assert ask["app"] == "bert-finetune-ft12"
    assert ask["priority"] == 500
    assert ask["resources"] == {"memory": 32 * GI, "nvidia.com/gpu": 1, "pods": 1, "vcore": 8000}
    assert ask["triggered_preemption"] is True
    assert ask["allow_preempt_other"] is True
    assert ask["created"] == pytest.approx(1788256620.05587123)


def test_opt_outs_only_from_the_state_dump() -> None:
    """The dump's shim cache opts out the ad-hoc driver (pod) and llm-serving (PriorityClass)."""
    dump = allocations(dump_import())
    assert {k for k, a in dump.items() if not a["allow_preemption"]} == OPTED_OUT
    assert (
        dump["348f65e2-c093-503e-a944-090a0278e003"]["pod"] == "analytics/adhoc-report-77c2-driver"
    )
    rest = allocations(rest_import())
    assert all(a["allow_preemption"] for a in rest.values())
    assert any("no allow-preemption flag" in w for w in rest_import().warnings)


def test_rest_and_state_dump_agree_on_the_cluster() -> None:
    """Same queues, nodes, allocations (but the opt-outs only the dump knows), asks, apps."""
    rest, dump = rest_import(), dump_import()
    assert rest.scenario["queues"] == dump.scenario["queues"]
    assert rest.scenario["nodes"] == dump.scenario["nodes"]
    assert rest.scenario["partition"] == dump.scenario["partition"]
    ra, da = allocations(rest), allocations(dump)
    assert ra.keys() == da.keys()
    for key in ra:
        expected = dict(ra[key], allow_preemption=key not in OPTED_OUT)
        assert da[key] == expected
    assert rest.asks == dump.asks
    assert rest.applications == dump.applications
    assert rest.queue_usage == dump.queue_usage


def test_no_cross_check_warnings_on_consistent_files() -> None:
    """The fixture files agree with each other: no mismatch is reported."""
    for imp in (rest_import(), dump_import()):
        assert not [w for w in imp.warnings if "sum to" in w], imp.warnings


def test_cross_check_warns_on_mismatch() -> None:
    """A queue figure that does not match its allocations is reported."""
    files = rest_files()
    tree = json.loads(files["partition_queues.json"])
    batch = next(c for c in tree["children"] if c["queuename"] == "root.batch")
    batch["preemptingResource"] = {"vcore": 1000}
    files["partition_queues.json"] = json.dumps(tree).encode()
    warnings = parse_snapshot(files).warnings
    assert any("root.batch preemptingResource {vcore: 1}" in w for w in warnings), warnings


def test_node_capacity_excludes_foreign_pods() -> None:
    """coredns (default-scheduler) occupies worker-cpu-1: the engine sees what is left."""
    node = rest_import().scenario["nodes"][0]
    assert node["reported_capacity"]["vcore"] == 16000
    assert node["occupied"] == {"memory": 73400320, "pods": 1, "vcore": 100}
    assert node["capacity"]["vcore"] == 15900
    # worker-gpu-1 reports no GPU in "available" (all used); capacity keeps its 4 GPUs
    assert rest_import().scenario["nodes"][2]["capacity"]["nvidia.com/gpu"] == 4


def test_queue_properties_use_evaluated_fields() -> None:
    """Fences, disabled preemption and offsets come from the evaluated REST fields."""
    snap = engine_snapshot(rest_import())
    assert snap.queue("root.research").preemption_policy == "fence"
    assert snap.queue("root.research").priority_fence is True
    assert snap.queue("root.research.nlp").preemption_policy == "default"
    assert snap.queue("root.monitoring").preemption_policy == "disabled"
    assert snap.queue("root.production.inference").preemption_policy == "disabled"
    assert snap.queue("root.batch").priority_offset == -100
    assert snap.queue("root.research.nlp").quota_preemption_delay == 600.0
    assert snap.queue("root.batch").preemption_delay == 60.0


def test_applications_times() -> None:
    """submissionTime is ns, startTime ms; the completed app has a finish time."""
    apps = {a["id"]: a for a in rest_import().applications}
    bert = apps["bert-finetune-ft12"]
    assert bert["submission_time"] == pytest.approx(1788253980.402118006)
    assert bert["start_time"] == pytest.approx(1788253980.409)
    assert bert["queue"] == "root.production.training"
    done = apps["spark-1b2c3d4e5f60718293a4b5c6d7e8f901"]
    assert done["state"] == "Completed"
    assert done["finished_time"] == pytest.approx(1788254670.451002003)


def tree_only(tree: dict[str, Any]) -> dict[str, bytes]:
    return {"partition_queues.json": json.dumps(tree).encode()}


def base_tree() -> dict[str, Any]:
    tree: dict[str, Any] = json.loads((REST / "partition_queues.json").read_text())
    return tree


def test_queue_tree_alone_gives_a_valid_snapshot() -> None:
    """Only partition_queues.json: no nodes, no allocations, still a valid scenario."""
    imp = parse_snapshot(tree_only(base_tree()))
    assert imp.scenario["nodes"] == []
    assert imp.scenario["allocations"] == []
    assert imp.scenario["partition"]["quota_preemption_enabled"] is False
    assert any("flag is unknown" in w for w in imp.warnings)
    parse_scenario(scenario_json(imp.scenario, {"type": "resources", "queue": "root.batch"}))
    assert imp.queue_usage["root.batch"]["allocated"]["vcore"] == 12000


def test_go_zero_start_time_and_dynamic_queue() -> None:
    """Go's zero time means never started; an unmanaged (dynamic) queue gets no delay."""
    tree = base_tree()
    research = next(c for c in tree["children"] if c["queuename"] == "root.research")
    dyn = copy.deepcopy(research["children"][0])
    dyn.update(queuename="root.research.team-x", isManaged=False, quotaPreemptionDelay="10m0s")
    research["children"].append(dyn)
    apps = [
        {
            "applicationID": "never-started",
            "partition": "default",
            "queueName": "root.research.team-x",
            "startTime": -62135596800000,
            "applicationState": "Accepted",
        }
    ]
    files = tree_only(tree) | {"apps.json": json.dumps(apps).encode()}
    imp = parse_snapshot(files)
    (app,) = imp.applications
    assert app["start_time"] is None
    team = next(
        c for c in imp.scenario["queues"]["children"][3]["children"] if c["name"] == "team-x"
    )
    assert team["is_managed"] is False
    assert team["quota_preemption_delay"] == 0.0
    assert imp.queue_usage["root.research.team-x"]["quota_preemption_delay"] == 600.0


def test_all_zero_rest_max_is_not_set() -> None:
    """A REST maxResource without a positive value is read as not set, with a warning."""
    tree = base_tree()
    tree["children"][1]["maxResource"] = {"nvidia.com/gpu": 0}
    imp = parse_snapshot(tree_only(tree))
    monitoring = next(c for c in imp.scenario["queues"]["children"] if c["name"] == "monitoring")
    assert "max" not in monitoring
    assert any("root.monitoring max" in w and "no positive value" in w for w in imp.warnings)


def test_single_queue_file_is_not_a_snapshot() -> None:
    """/queue/root.batch without the tree is refused, explaining what is needed."""
    with pytest.raises(ImportFailure, match="whole queue tree"):
        parse_snapshot({"q.json": (REST / "partition_queue_root.batch.json").read_bytes()})


def test_allocation_on_unknown_node_in_rest_nodes_list() -> None:
    """An allocation under a node that names another node is refused with file and key."""
    files = rest_files()
    nodes = json.loads(files["partition_nodes.json"])
    nodes[2]["allocations"][0]["nodeId"] = "worker-gpu-9"
    files["partition_nodes.json"] = json.dumps(nodes).encode()
    with pytest.raises(ImportFailure) as info:
        parse_snapshot(files)
    assert info.value.location == "partition_nodes.json: [2].allocations[0].nodeId"
    assert "worker-gpu-9" in info.value.message


def test_allocation_in_unknown_queue() -> None:
    """An application whose queue is not in the tree is refused naming the key."""
    files = rest_files()
    apps = json.loads(files["partition_applications_active.json"])
    apps[0]["queueName"] = "root.nowhere"
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    files.pop("queue_applications_root.batch.json")
    with pytest.raises(ImportFailure, match=r"unknown queue 'root\.nowhere'"):
        parse_snapshot(files)


def test_state_dump_with_other_files_uses_the_dump() -> None:
    """A folder holding the dump imports the dump and says which files it ignored."""
    imp = parse_snapshot(rest_files(dump=True))
    assert imp.kind == "statedump"
    (ignored,) = [w for w in imp.warnings if "these files were ignored" in w]
    # the dump holds no events: the events batch beside it is read, not ignored
    assert "events_batch.json" not in ignored
    assert imp.observed is not None
    assert imp.observed == rest_import().observed


def test_size_capped_before_parsing() -> None:
    """More than 64 MiB in total is refused before any JSON is read."""
    with pytest.raises(ImportFailure, match="64 MiB"):
        parse_snapshot(
            {
                "a.json": b" " * (MAX_SNAPSHOT_BYTES // 2 + 1),
                "b.json": b" " * (MAX_SNAPSHOT_BYTES // 2),
            }
        )


def test_a_poller_may_allow_a_larger_total() -> None:
    """max_bytes raises the total cap (a big cluster's answers); each file is still read."""
    files = {
        "a.json": b" " * (MAX_SNAPSHOT_BYTES // 2 + 1),
        "b.json": b" " * (MAX_SNAPSHOT_BYTES // 2),
    }
    with pytest.raises(ImportFailure, match="invalid JSON") as info:
        parse_snapshot(files, max_bytes=2 * MAX_SNAPSHOT_BYTES)
    assert (info.value.location or "").startswith("a.json")


def test_scenario_json_round_trip() -> None:
    """An exported scenario imports back as kind scenario with the same cluster and ask."""
    rest = rest_import()
    ask = {k: rest.asks[0][k] for k in ("key", "app", "queue", "resources", "priority", "created")}
    doc = scenario_json(rest.scenario, {"type": "preempt", "ask": ask})
    imp = parse_snapshot({"s.json": json.dumps(doc).encode()})
    assert imp.kind == "scenario"
    assert imp.scenario == rest.scenario
    assert imp.asks == (ask,)
    assert imp.queue_usage["root.batch"]["usage"]["vcore"] == 10000
    assert imp.queue_usage["root.batch"]["preempting"]["vcore"] == 2000


def test_scenario_must_be_alone() -> None:
    """A scenario mixed with REST files is refused."""
    doc = scenario_json(rest_import().scenario, {"type": "resources", "queue": "root"})
    files = {"s.json": json.dumps(doc).encode(), "partitions.json": rest_files()["partitions.json"]}
    with pytest.raises(ImportFailure, match="must be imported alone"):
        parse_snapshot(files)


@pytest.mark.subprocess
def test_python_m_engine_accepts_the_exported_snapshot(tmp_path: Path) -> None:
    """The state dump, exported with a quota change, runs through `python -m engine`."""
    doc = scenario_json(
        dump_import().scenario,
        {"type": "quota_change", "queue": "root.batch", "new_max": {"vcore": 8000}},
    )
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    out = subprocess.run(
        [sys.executable, "-m", "engine", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.returncode == 0, out.stdout + out.stderr
    answer = json.loads(out.stdout)
    assert answer["queue"] == "root.batch"
    assert answer["preemptable"] == {"vcore": 2000}
