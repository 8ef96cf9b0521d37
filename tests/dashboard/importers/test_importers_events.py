"""The scheduler's events (/ws/v1/events/batch) -> its queue max changes and preemptions.

On the shared acme-ml batch (the 09:54:30 root.batch max decrease, the 09:57:30
training preemption of the GPU notebook, the 09:59:30 root.batch quota
preemption taking the two ad-hoc executors) and on lab-west's batch
(data/cluster-b: two max changes, a quota preemption, two inter-queue
preemptions, one released victim).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dashboard.importers import ImportFailure, parse_snapshot
from dashboard.importers.events import go_map, parse_events

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b" / "rest"
GI = 2**30


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def rest(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.json"))}


def allocations_of(folder: Path) -> dict[str, dict[str, Any]]:
    snap = parse_snapshot({k: v for k, v in rest(folder).items() if k != "fullstatedump.json"})
    return {a["key"]: a for a in snap.scenario["allocations"]}


@pytest.fixture
def shared_rest(fixtures_dir: Path) -> Path:
    return fixtures_dir / "rest"


def test_shared_batch_ids_follow_start(shared_rest: Path) -> None:
    data = (shared_rest / "events_batch.json").read_bytes()
    batch = parse_events(data, start=15230)
    assert [e.id for e in batch.records] == list(range(15230, 15251))
    assert batch.last_event_id == batch.highest_id == 15250
    assert batch.next_start == 15251
    assert parse_events(data).start == 15230  # without start: the batch ends at HighestID


def test_shared_batch_quota_preemption_of_root_batch(shared_rest: Path) -> None:
    batch = parse_events(
        (shared_rest / "events_batch.json").read_bytes(),
        allocations=allocations_of(shared_rest),
    )
    (change,) = batch.queue_max_changes
    assert change.queue == "root.batch"
    assert change.new_max == {"memory": 48 * GI, "vcore": 10000}
    assert int(change.time) == int(ts("2026-09-01T09:54:30"))
    (quota,) = batch.quota_preemptions
    assert quota.queue == "root.batch"
    assert abs(quota.time - ts("2026-09-01T09:59:30")) < 1
    assert quota.preemptable == {"vcore": 2000}
    assert quota.claimed == {"memory": 8 * GI, "pods": 2, "vcore": 2000}
    assert (quota.selected_victims, quota.preempted_victims) == (8, 2)
    assert quota.max == {"memory": 48 * GI, "vcore": 10000}
    # the victims are the two ad-hoc executors the nodes list marks preempted in root.batch
    nodes = json.loads((shared_rest / "partition_nodes.json").read_bytes())
    preempted = {
        a["allocationKey"]: (n["nodeID"], a["resource"])
        for n in nodes
        for a in n["allocations"]
        if a.get("preempted") and a["applicationId"].startswith("spark-9c8b")
    }
    assert {v.allocation_key for v in quota.victims} == set(preempted)
    for v in quota.victims:
        assert v.app == "spark-9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49"
        assert v.queue == "root.batch"
        assert (v.node, v.resources) == preempted[v.allocation_key]
    claimed: dict[str, int] = {}
    for v in quota.victims:
        for t, q in v.resources.items():
            claimed[t] = claimed.get(t, 0) + q
    assert claimed == quota.claimed


def test_shared_batch_training_preempts_the_notebook(shared_rest: Path) -> None:
    batch = parse_events(
        (shared_rest / "events_batch.json").read_bytes(),
        allocations=allocations_of(shared_rest),
    )
    (pre,) = batch.preemptions
    assert pre.ask == "0561dd16-bf2d-5231-b2cf-650f76e87d42"
    assert (pre.app, pre.queue) == ("bert-finetune-ft12", "root.production.training")
    assert abs(pre.time - ts("2026-09-01T09:57:30")) < 2
    (victim,) = pre.victims
    assert victim.app == "nlp-notebook-bob"
    assert victim.queue == "root.research.nlp"
    assert victim.node == "worker-gpu-1"
    assert victim.resources["nvidia.com/gpu"] == 1
    assert victim.released_at is None  # still terminating at capture


def test_cluster_b_batch() -> None:
    batch = parse_events(
        (CLUSTER_B / "events_batch.json").read_bytes(),
        start=48100,
        allocations=allocations_of(CLUSTER_B),
    )
    assert [(c.queue, c.new_max) for c in batch.queue_max_changes] == [
        ("root.reports", {"memory": 48 * GI, "vcore": 12000}),
        ("root.reports", {"memory": 48 * GI, "vcore": 11000}),
    ]
    assert [int(c.time) for c in batch.queue_max_changes] == [
        int(ts("2026-10-14T13:30:00")),
        int(ts("2026-10-14T13:58:00")),
    ]
    (quota,) = batch.quota_preemptions
    assert (quota.queue, quota.preemptable, quota.claimed) == (
        "root.reports",
        {"vcore": 2000},
        {"memory": 4 * GI, "pods": 2, "vcore": 2000},
    )
    assert {v.app for v in quota.victims} == {"adhoc-dash-77"}
    assert {v.node for v in quota.victims} == {"node-a"}
    erin, dave = batch.preemptions
    assert (erin.app, erin.queue) == ("etl-hourly-1400", "root.etl")
    (erin_victim,) = erin.victims
    # released before the capture: not in the snapshot, node from the NODE_ALLOC removal
    assert erin_victim.queue is None
    assert erin_victim.node == "node-a"
    assert erin_victim.released_at == pytest.approx(ts("2026-10-14T13:45:31.002004"))
    (release,) = batch.releases
    assert (release.allocation_key, release.app) == (erin_victim.allocation_key, "notebook-erin")
    (dave_victim,) = dave.victims
    assert (dave_victim.app, dave_victim.queue, dave_victim.node) == (
        "notebook-dave",
        "root.sandbox",
        "node-c",
    )
    assert batch.warnings == ()


def test_incremental_polling_gives_the_same_history() -> None:
    """Split between the two quota victims: the first one waits for its summary."""
    doc = json.loads((CLUSTER_B / "events_batch.json").read_bytes())
    whole = parse_events(doc, start=48100)
    first, second = copy.deepcopy(doc), copy.deepcopy(doc)
    first["EventRecords"] = doc["EventRecords"][:8]
    second["EventRecords"] = doc["EventRecords"][8:]
    a = parse_events(first, start=48100)
    assert a.next_start == 48108
    assert [v.event_id for v in a.waiting] == [48107]
    assert a.quota_preemptions == ()
    b = parse_events(second, start=a.next_start, carry=a.waiting)
    assert b.next_start == whole.next_start == 48113
    assert b.waiting == whole.waiting == ()
    assert a.records + b.records == whole.records
    assert a.queue_max_changes + b.queue_max_changes == whole.queue_max_changes
    assert b.quota_preemptions == whole.quota_preemptions
    assert a.preemptions + b.preemptions == whole.preemptions
    assert a.releases + b.releases == whole.releases


def test_nothing_new_and_lost_events() -> None:
    nothing = parse_events(
        {"InstanceUUID": "u", "LowestID": 10, "HighestID": 20, "EventRecords": None}, start=21
    )
    assert (nothing.records, nothing.next_start, nothing.warnings) == ((), 21, ())
    lost = parse_events(
        {"InstanceUUID": "u", "LowestID": 10, "HighestID": 20, "EventRecords": []}, start=3
    )
    assert lost.next_start == 10
    assert "events 3 to 9 are no longer" in lost.warnings[0]


def test_unknown_enums_and_messages_are_kept() -> None:
    doc = {
        "InstanceUUID": "u",
        "LowestID": 0,
        "HighestID": 1,
        "EventRecords": [
            {"type": 9, "objectID": "x", "timestampNano": 5, "eventChangeDetail": 999},
            {
                "type": 4,
                "objectID": "root.q",
                "message": "Quota Preemption results summary: ???",
                "timestampNano": 6,
                "eventChangeType": 1,
                "eventChangeDetail": 407,
                "resource": {},
            },
        ],
    }
    batch = parse_events(doc, start=0)
    first = batch.records[0]
    assert (first.type, first.type_name, first.change_detail, first.detail_name) == (
        9,
        None,
        999,
        None,
    )
    (quota,) = batch.quota_preemptions
    assert (quota.queue, quota.claimed, quota.victims) == ("root.q", None, ())
    assert "not understood" in batch.warnings[0]


def test_go_maps() -> None:
    assert go_map("map[memory:8589934592 nvidia.com/gpu:1 vcore:2000]") == {
        "memory": 8589934592,
        "nvidia.com/gpu": 1,
        "vcore": 2000,
    }
    assert go_map("map[]") == {}
    assert go_map("nil resource") is None
    assert go_map("map[vcore:x]") is None


@pytest.mark.parametrize(
    ("change", "location", "words"),
    [
        (lambda d: d["EventRecords"].__setitem__(2, "x"), "EventRecords[2]", "event record object"),
        (
            lambda d: d["EventRecords"][2]["resource"]["resources"]["vcore"].__setitem__(
                "value", "1"
            ),
            "EventRecords[2].resource.resources.vcore.value",
            "integer",
        ),
        (
            lambda d: d["EventRecords"][3].__setitem__("timestampNano", "soon"),
            "EventRecords[3].timestampNano",
            "integer",
        ),
        (lambda d: d["EventRecords"][0].__setitem__("type", -1), "EventRecords[0].type", "range"),
        (
            lambda d: d["EventRecords"][1].__setitem__("message", 7),
            "EventRecords[1].message",
            "string",
        ),
        (lambda d: d.__setitem__("EventRecords", {}), "EventRecords", "list"),
        (lambda d: d.__setitem__("HighestID", -1), "HighestID", "range"),
    ],
)
def test_malformed_batch_names_the_record_and_field(change: Any, location: str, words: str) -> None:
    doc = json.loads((CLUSTER_B / "events_batch.json").read_bytes())
    change(doc)
    with pytest.raises(ImportFailure) as info:
        parse_events(json.dumps(doc).encode(), start=48100)
    assert info.value.location == f"events_batch.json: {location}"
    assert words in info.value.message


def test_not_an_events_batch() -> None:
    with pytest.raises(ImportFailure, match="no EventRecords"):
        parse_events(b"[]", filename="x.json")
    with pytest.raises(ImportFailure, match="invalid JSON"):
        parse_events(b"{", filename="x.json")


def test_a_rest_folder_with_events_is_observed() -> None:
    """parse_snapshot parses events_batch.json too, naming victims from the allocations."""
    snap = parse_snapshot(rest(CLUSTER_B))
    assert snap.observed is not None
    (quota,) = snap.observed.quota_preemptions
    assert {(v.queue, v.node) for v in quota.victims} == {("root.reports", "node-a")}
    dave = snap.observed.preemptions[-1].victims[0]
    assert (dave.queue, dave.node) == ("root.sandbox", "node-c")


def test_a_malformed_events_file_refuses_the_snapshot() -> None:
    files = rest(CLUSTER_B)
    doc = json.loads(files["events_batch.json"])
    doc["EventRecords"][4]["timestampNano"] = "later"
    files["events_batch.json"] = json.dumps(doc).encode()
    with pytest.raises(ImportFailure) as info:
        parse_snapshot(files)
    assert info.value.location == "events_batch.json: EventRecords[4].timestampNano"
