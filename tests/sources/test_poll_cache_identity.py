"""A poller that keeps what it read (the parse's memo, the checksum's texts) stores what
a poller without them stores, poll after poll: pods replaced, only usage figures
changed, applications, nodes and queues added, removed and changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sources_helpers import T0, snapshot_rows
from support.benchmarks import benchmark_module

from dashboard import models as dm
from dashboard.sources import poll as poll_module
from dashboard.sources import services
from dashboard.sources.client import FetchError, FetchResult
from dashboard.sources.models import ClusterSource, SourceSnapshot

pytestmark = pytest.mark.django_db

NODES = "partition_nodes.json"
APPS = "partition_applications_active.json"
PARTITIONS = "partitions.json"
QUEUES = "partition_queues.json"

Answers = dict[str, Any]


def _bench() -> Any:
    return benchmark_module("import_rest")


def _usage_only(doc: Answers, generation: int) -> None:
    for i, node in enumerate(doc[NODES]):
        node["utilized"] = {"memory": (i + generation) % 100, "vcore": (i * 7 + generation) % 100}
    doc[PARTITIONS][0]["lastStateTransitionTime"] = 1_700_000_000_000_000_000 + generation


def _node_capacity(doc: Answers, generation: int) -> None:
    _usage_only(doc, generation)
    doc[NODES][3]["capacity"]["vcore"] += 1000


def _remove_app(doc: Answers, generation: int) -> None:
    app = doc[APPS].pop(2)
    gone = {a["allocationKey"] for a in app["allocations"]}
    for node in doc[NODES]:
        node["allocations"] = [a for a in node["allocations"] if a["allocationKey"] not in gone]


def _add_app(doc: Answers, generation: int) -> None:
    template = doc[APPS][0]
    app = json.loads(json.dumps(template))
    app_id = f"app-new-{generation}"
    app["applicationID"] = app_id
    app["allocations"] = []
    for k, node in enumerate(doc[NODES][20:22]):
        alloc = json.loads(json.dumps(doc[NODES][0]["allocations"][0]))
        alloc["allocationKey"] = f"{app_id}-{k}"
        alloc["nodeId"] = node["nodeID"]
        alloc["applicationId"] = app_id
        alloc["allocationTags"]["kubernetes.io/label/applicationId"] = app_id
        alloc["allocationTags"]["kubernetes.io/label/queue"] = app["queueName"]
        alloc["allocationTags"]["kubernetes.io/meta/podName"] = f"{app_id}-pod-{k}"
        node["allocations"].append(alloc)
        app["allocations"].append(alloc)
    doc[APPS].append(app)


def _remove_node(doc: Answers, generation: int) -> None:
    node = doc[NODES].pop(10)
    gone = {a["allocationKey"] for a in node["allocations"]}
    for app in doc[APPS]:
        app["allocations"] = [a for a in app["allocations"] if a["allocationKey"] not in gone]


def _add_node(doc: Answers, generation: int) -> None:
    node = json.loads(json.dumps(doc[NODES][0]))
    node["nodeID"] = f"worker-new-{generation}"
    node["allocations"] = []
    node["allocated"] = {}
    doc[NODES].append(node)


def _leaves(queue: dict[str, Any]) -> list[dict[str, Any]]:
    children = queue.get("children") or []
    return [queue] if not children else [leaf for c in children for leaf in _leaves(c)]


def _move_app(doc: Answers, generation: int) -> None:
    """An application moved to another leaf queue: its allocations are listed under
    their nodes byte for byte as before but for the queue tag."""
    _usage_only(doc, generation)
    app = doc[APPS][4]
    other = next(
        q["queuename"]
        for q in _leaves(doc[QUEUES])
        if q["queuename"] not in (app["queueName"], "root.monitoring")
    )
    app["queueName"] = other
    keys = {a["allocationKey"] for a in app["allocations"]}
    for node in doc[NODES]:
        for a in node["allocations"]:
            if a["allocationKey"] in keys:
                a["allocationTags"]["kubernetes.io/label/queue"] = other
    for a in app["allocations"]:
        a["allocationTags"]["kubernetes.io/label/queue"] = other


def _queue_limit(doc: Answers, generation: int) -> None:
    _usage_only(doc, generation)
    _leaves(doc[QUEUES])[0]["maxResource"] = {"vcore": 10_000_000, "memory": 2**45}


def test_polls_with_the_memo_store_what_polls_without_it_store() -> None:
    """Two sources follow the same scheduler's answers through twelve polls: one keeps
    what its last poll read, the other forgets it before every poll (the full parse and
    checksum). Each poll has the same outcome on both, and the snapshots stored (rows,
    spans, checksum, queue figures, the engine's preemptable, the state fingerprint)
    are equal; the kept reads were used (whole nodes, nodes but for their figures, the
    checksum's texts)."""
    bench = _bench()
    answers = bench.build_answers(30, 4)
    cached = ClusterSource.objects.create(
        name="cached",
        base_url="http://127.0.0.1:9",
        cluster=dm.Cluster.objects.create(name="cached"),
    )
    full = ClusterSource.objects.create(
        name="full",
        base_url="http://127.0.0.1:9",
        cluster=dm.Cluster.objects.create(name="full"),
    )
    current = {"files": answers}

    def fetch(_source: ClusterSource) -> FetchResult:
        return FetchResult(files=dict(current["files"]))

    def nothing(*_args: Any) -> bytes:
        raise FetchError("events", "not served here")

    def churn(doc: Answers, generation: int) -> None:
        files = {k: json.dumps(v, separators=(",", ":")).encode() for k, v in doc.items()}
        changed = bench.replace_pods(files, 0.1, generation)
        doc.update({k: json.loads(v) for k, v in changed.items()})

    steps: list[tuple[str, Callable[[Answers, int], None]]] = [
        ("first", lambda doc, g: None),
        ("churn", churn),
        ("usage only", _usage_only),
        ("node capacity", _node_capacity),
        ("application removed", _remove_app),
        ("application added", _add_app),
        ("usage only again", _usage_only),
        ("node removed", _remove_node),
        ("node added", _add_node),
        ("application moved to another queue", _move_app),
        ("queue limit", _queue_limit),
        ("churn again", churn),
    ]
    outcomes: list[tuple[str, str, str]] = []
    partly = reused = texts_reused = 0
    for generation, (label, change) in enumerate(steps):
        doc = {k: json.loads(v) for k, v in current["files"].items()}
        change(doc, generation)
        current["files"] = {
            k: json.dumps(v, separators=(",", ":")).encode() for k, v in doc.items()
        }
        now = T0 + timedelta(minutes=generation)
        kept = services.poll_source(
            cached.pk, now=now, force=True, fetch=fetch, events=nothing, config=nothing
        )
        memo, texts = poll_module._memos[cached.pk]
        partly, reused = partly + memo.partly, reused + memo.reused
        texts_reused += texts.reused
        texts.reused = memo.partly = memo.reused = 0
        poll_module._memos.pop(full.pk, None)  # the full parse and checksum
        plain = services.poll_source(
            full.pk, now=now, force=True, fetch=fetch, events=nothing, config=nothing
        )
        outcomes.append((label, kept.status, plain.status))
        assert kept.status == plain.status, label
        if kept.status != "stored":
            continue
        assert kept.snapshot_id is not None
        assert plain.snapshot_id is not None
        one = dm.ClusterSnapshot.objects.get(pk=kept.snapshot_id)
        other = dm.ClusterSnapshot.objects.get(pk=plain.snapshot_id)
        assert snapshot_rows(one) == snapshot_rows(other), label
        assert (
            dm.SnapshotPreemptable.objects.get(snapshot=one).values
            == dm.SnapshotPreemptable.objects.get(snapshot=other).values
        ), label
        assert (
            SourceSnapshot.objects.get(snapshot=one).fingerprint
            == SourceSnapshot.objects.get(snapshot=other).fingerprint
        ), label
    stored = [label for label, status, _ in outcomes if status == "stored"]
    assert [label for label, status, _ in outcomes if status == "unchanged"] == [
        "usage only",
        "usage only again",
    ]
    assert len(stored) == len(steps) - 2
    assert partly > 0  # node objects read but for their allocations
    assert reused > 0  # node objects taken whole
    assert texts_reused > 0  # the checksum's texts of allocations that did not change
