"""The importer's cross-check of every queue's allocatedResource against its allocations."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from shared_fixtures import FIXTURES
from support.profiles import examples

from dashboard.importers import parse_snapshot
from dashboard.importers.quantities import format_resource
from dashboard.importers.snapshot.checks import _cross_check
from dashboard.importers.snapshot.statedump import _Sources

REST = FIXTURES / "rest"


def _clear_allocated(queue: dict[str, Any]) -> None:
    queue["allocatedResource"] = {}
    for child in queue.get("children") or []:
        _clear_allocated(child)


def test_every_queue_is_checked_against_the_sum_of_its_subtree() -> None:
    """With every queue claiming nothing allocated, each queue holding allocations in its
    subtree is reported with exactly their sum (preempted ones included)."""
    files = {p.name: p.read_bytes() for p in sorted(REST.glob("partition*.json"))}
    tree = json.loads(files["partition_queues.json"])
    _clear_allocated(tree)
    files["partition_queues.json"] = json.dumps(tree).encode()
    imported = parse_snapshot(files)
    expected: dict[str, dict[str, int]] = {}
    for a in imported.scenario["allocations"]:
        parts = a["queue"].split(".")
        for i in range(1, len(parts) + 1):
            sums = expected.setdefault(".".join(parts[:i]), {})
            for t, q in a["resources"].items():
                sums[t] = sums.get(t, 0) + q
    assert len(expected) > 3
    reported = sorted(w for w in imported.warnings if " allocatedResource " in w)
    assert reported == sorted(
        f"partition_queues.json: {path} allocatedResource {format_resource({})} but its "
        f"allocations (preempted ones included) sum to {format_resource(sums)}"
        for path, sums in expected.items()
    )


SHARED_MAPS: list[dict[str, int]] = [
    {"vcore": 1000, "memory": 2**31},
    {"memory": 2**30, "nvidia.com/gpu": 1},
    {"pods": 1},
]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["root.a", "root.b.c"]),
            st.booleans(),
            st.sampled_from(SHARED_MAPS)
            | st.dictionaries(st.sampled_from(["pods", "gpu", "vcore"]), st.integers(1, 9)),
        ),
        max_size=30,
    )
)
def test_queue_sums_of_allocations_sharing_maps(
    picked: list[tuple[str, bool, dict[str, int]]],
) -> None:
    """The sums reported are those of each queue's allocations added one by one (types
    in the order the allocations first hold them), however many share one map."""
    allocations: list[dict[str, Any]] = [
        {"queue": q, "preempted": p, "resources": r} for q, p, r in picked
    ]
    paths = ("root", "root.a", "root.b", "root.b.c")
    usage: dict[str, dict[str, Any]] = {p: {"allocated": {}, "preempting": {}} for p in paths}
    src = _Sources(kind="rest", tree=("partition_queues.json", "", {}), nodes=("nodes", "", []))
    _cross_check(src, usage, allocations, {}, {}, {}, {})
    # each queue's own allocations added one by one, then each queue (in the order the
    # allocations first name it) into its ancestors
    own: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for a in allocations:
        sums = own.setdefault(a["queue"], ({}, {}))
        for into in (sums[0], sums[1]) if a["preempted"] else (sums[0],):
            for t, q in a["resources"].items():
                into[t] = into.get(t, 0) + q
    expected = []
    for path in sorted(paths):
        mine: tuple[dict[str, int], dict[str, int]] = ({}, {})
        for queue, sums in own.items():
            if queue == path or queue.startswith(path + "."):
                for into, part in zip(mine, sums, strict=True):
                    for t, q in part.items():
                        into[t] = into.get(t, 0) + q
        if mine[0]:
            expected.append(
                f"partition_queues.json: {path} allocatedResource {{}} but its allocations "
                f"(preempted ones included) sum to {format_resource(mine[0])}"
            )
        if mine[1]:
            expected.append(
                f"partition_queues.json: {path} preemptingResource {{}} but its preempted "
                f"allocations sum to {format_resource(mine[1])}"
            )
    assert src.warnings == expected
