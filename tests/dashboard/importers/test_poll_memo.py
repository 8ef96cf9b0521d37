"""A poller's parse with its memo (dashboard.importers.snapshot.memo) gives what a parse
without it gives, answer after answer: the same import, or the same refusal; and it
reads again only the node and application objects whose bytes changed."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from support.benchmarks import benchmark_module

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import PollMemo, SnapshotImport, parse_polled, parse_snapshot
from dashboard.importers.snapshot.memo import KnownApp

LIMIT = 2**40
NODES = "partition_nodes.json"
APPS = "partition_applications_active.json"


def _bench() -> Any:
    return benchmark_module("import_rest")


BENCH = _bench()


@pytest.fixture(scope="module")
def cluster() -> dict[str, bytes]:
    """40 nodes of 5 allocations each, in 20 applications."""
    files: dict[str, bytes] = BENCH.build_answers(40, 5)
    return files


def _edit(files: dict[str, bytes], name: str, change: Any) -> dict[str, bytes]:
    doc = json.loads(files[name])
    change(doc)
    return {**files, name: json.dumps(doc, separators=(",", ":")).encode()}


def _same(memo: PollMemo, files: dict[str, bytes]) -> SnapshotImport | str:
    """The memo's parse, checked equal to a parse without it; the import or the refusal."""
    try:
        expected: SnapshotImport | str = parse_snapshot(files, max_bytes=LIMIT)
    except ImportFailure as exc:
        expected = str(exc)
    try:
        actual: SnapshotImport | str = parse_polled(files, memo, max_bytes=LIMIT)
    except ImportFailure as exc:
        actual = str(exc)
    if isinstance(expected, str) or isinstance(actual, str):
        assert actual == expected
        return actual
    assert actual.to_dict() == expected.to_dict()
    assert actual.cluster == expected.cluster
    assert actual.completed == expected.completed
    return actual


def test_a_changed_answer_reads_only_the_changed_nodes(cluster: dict[str, bytes]) -> None:
    """Polls with some pods replaced: the same imports, and the unchanged node objects
    are taken from the memo instead of read again."""
    memo = PollMemo()
    _same(memo, cluster)
    assert memo.reused == 0
    files = cluster
    for generation in range(1, 4):
        memo.reused = memo.decoded = 0
        files = BENCH.replace_pods(files, 0.02, generation)
        _same(memo, files)
        assert memo.reused > 20
        assert memo.decoded > 0
    memo.reused = memo.decoded = 0
    _same(memo, files)  # the same answers again: every node but the first is known
    assert memo.reused == 39
    assert sum(type(k) is KnownApp for k in memo.known.values()) == 20


def _move_app(doc: list[dict[str, Any]]) -> None:
    doc[3]["queueName"] = (
        doc[4]["queueName"] if doc[4]["queueName"] != doc[3]["queueName"] else "root.monitoring"
    )


def _swap_nodes(doc: list[dict[str, Any]]) -> None:
    doc[1], doc[2] = doc[2], doc[1]


def _drop_node(doc: list[dict[str, Any]]) -> None:
    del doc[5]


def _repeat_node(doc: list[dict[str, Any]]) -> None:
    doc.append(doc[7])


def _repeat_key(doc: list[dict[str, Any]]) -> None:
    doc[9]["allocations"].append(doc[8]["allocations"][0])


def _bad_resource(doc: list[dict[str, Any]]) -> None:
    doc[6]["allocations"][0]["resource"]["vcore"] = -1


def _figures(doc: list[dict[str, Any]]) -> None:
    for i, node in enumerate(doc):
        node["utilized"] = {"memory": i % 100, "vcore": (i * 7) % 100}


def _figures_and_capacity(doc: list[dict[str, Any]]) -> None:
    _figures(doc)
    doc[4]["capacity"]["vcore"] += 1000
    doc[5]["allocated"] = {"vcore": 1}


def _figures_and_node_renamed(doc: list[dict[str, Any]]) -> None:
    _figures(doc)
    doc[6]["nodeID"] = "worker-renamed"


def _figures_and_bad_key(doc: list[dict[str, Any]]) -> None:
    _figures(doc)
    doc[3]["allocations"][0]["allocationKey"] = "bad\nkey"


def _figures_and_nan(doc: list[dict[str, Any]]) -> None:
    _figures(doc)
    doc[2]["utilized"] = {"memory": float("nan")}  # not JSON: refused, though never read


@pytest.mark.parametrize(
    ("name", "change"),
    [
        (NODES, _figures),
        (NODES, _figures_and_capacity),
        (NODES, _figures_and_node_renamed),
        (NODES, _figures_and_bad_key),
        (NODES, _figures_and_nan),
        (APPS, _move_app),
        (NODES, _swap_nodes),
        (NODES, _drop_node),
        (NODES, _repeat_node),
        (NODES, _repeat_key),
        (NODES, _bad_resource),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_answers_around_known_nodes_give_the_same_import_or_refusal(
    cluster: dict[str, bytes], name: str, change: Any
) -> None:
    """Only the nodes' figures changed (their allocations lists read from the memo), with
    a node's capacity, a node renamed, a bad allocation key, a NaN in a figure the
    import does not read; an application moved to
    another queue, nodes reordered, dropped or listed twice, a key on two nodes, a bad
    quantity: the same import or the same refusal as without a memo, and the memo
    serves the next poll again."""
    memo = PollMemo()
    _same(memo, cluster)
    _same(memo, _edit(cluster, name, change))
    _same(memo, BENCH.replace_pods(cluster, 0.05, 7))


def test_a_bad_nodes_answer_is_refused_as_without_a_memo(cluster: dict[str, bytes]) -> None:
    """Broken JSON, another kind of answer under the nodes answer's name: the same refusal."""
    memo = PollMemo()
    _same(memo, cluster)
    broken = {**cluster, NODES: cluster[NODES][:-10]}
    assert isinstance(_same(memo, broken), str)
    _same(memo, cluster)
    swapped = {**cluster, NODES: cluster[APPS], APPS: cluster[NODES]}
    _same(memo, swapped)


def test_a_random_sequence_of_polls(cluster: dict[str, bytes]) -> None:
    """Twelve polls mixing the changes above keep every import equal."""
    rng = random.Random(5)
    memo = PollMemo()
    files = cluster
    changes = [_move_app, _swap_nodes, _drop_node]
    for generation in range(12):
        if rng.random() < 0.3:
            change = rng.choice(changes)
            files = _edit(files, APPS if change is _move_app else NODES, change)
        else:
            files = BENCH.replace_pods(files, 0.03, 100 + generation)
        _same(memo, files)


def test_a_node_whose_figures_changed_is_read_but_for_its_allocations(
    cluster: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every node's figures changed, none of its allocations: each node object is read
    but for its allocations list (PartNode), and the names check visits only the
    allocations read anew, not those taken from the memo."""
    from dashboard.importers.snapshot import bounds

    checked: list[int] = []
    plain = bounds._allocations_plain

    def counted(allocations: Any) -> bool:
        checked.append(len(allocations))
        return plain(allocations)

    monkeypatch.setattr(bounds, "_allocations_plain", counted)
    memo = PollMemo()
    _same(memo, cluster)
    _same(memo, _edit(cluster, NODES, _figures))  # the lists' digests known from now on
    memo.partly = memo.reused = 0
    checked.clear()
    doc = json.loads(cluster[NODES])
    for i, node in enumerate(doc):
        node["utilized"] = {"memory": (i + 3) % 100}
    _same(memo, {**cluster, NODES: json.dumps(doc, separators=(",", ":")).encode()})
    assert memo.partly == 39  # every node but the first, which is always read whole
    assert checked == [200, 5]  # without the memo: all; with it: the first node's five


def test_nodes_listing_alike_are_known_apart(cluster: dict[str, bytes]) -> None:
    """Two nodes without allocations list alike (``[]``): each is known by its own id, so
    a poll where only their figures changed reads both but for their lists."""

    def two_empty(doc: list[dict[str, Any]]) -> None:
        for k in (1, 2):
            node = json.loads(json.dumps(doc[0]))
            node["nodeID"] = f"worker-empty-{k}"
            node["allocations"] = []
            node["allocated"] = {}
            node.pop("foreignAllocations", None)
            doc.append(node)

    files = _edit(cluster, NODES, two_empty)
    memo = PollMemo()
    _same(memo, files)
    _same(memo, _edit(files, NODES, _figures))
    memo.partly = memo.reused = 0
    doc = json.loads(files[NODES])
    for i, node in enumerate(doc):
        node["utilized"] = {"memory": (i + 3) % 100}
    _same(memo, {**files, NODES: json.dumps(doc, separators=(",", ":")).encode()})
    assert memo.partly == 41  # every node but the first, the two empty ones too
