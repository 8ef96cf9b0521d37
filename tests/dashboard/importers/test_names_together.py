"""The names of a snapshot are checked together first and one by one only when that
finds something: the same snapshots are refused, with the same first name named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import parse_snapshot
from dashboard.names import name_problem, names_are_plain

SCENARIO = Path(__file__).resolve().parents[2] / "engine" / "scenarios" / "quota_seed_enforced.json"


def _scenario(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCENARIO.read_text())["input"]
    doc.pop("request", None)
    base = doc["allocations"][0]
    doc["allocations"] = [
        {**base, "key": f"alloc-{i}", "app": f"app-{i}", "created": 100.0 + i} for i in range(5)
    ]
    for index, fields in changes.items():
        doc["allocations"][int(index.removeprefix("a"))].update(fields)
    return doc


def _refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(ImportFailure) as caught:
        parse_snapshot({"scenario.json": json.dumps(doc).encode()})
    return str(caught.value)


@pytest.mark.parametrize(
    "names",
    [[], ["a"], ["a", "b"], ["a", ""], ["a", "b\x00"], ["x" * 256], ["a", "\x85"], [1], ["\ud800"]],
)
def test_together_is_true_only_when_each_one_is_plain(names: list[object]) -> None:
    """names_are_plain is True exactly when name_problem finds nothing in any name."""
    expected = all(name_problem("node", n) is None for n in names)
    assert names_are_plain("node", names) == expected


def test_a_big_cluster_of_plain_names_is_accepted() -> None:
    """Plain names pass the check made together."""
    parsed = parse_snapshot({"scenario.json": json.dumps(_scenario()).encode()})
    assert parsed.cluster is not None
    assert len(parsed.cluster.allocations) == 5


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"a3": {"key": "bad\x01key"}}, "allocations[3].key"),
        ({"a2": {"app": "app\x7f"}, "a4": {"key": "k\x02"}}, "allocations[2].app"),
        ({"a1": {"resources": {"mem\x03ory": 20}}}, "allocations[1].resources"),
        ({"a4": {"created": 1e300}}, "allocations[4].created"),
    ],
)
def test_the_first_bad_allocation_is_named(changes: dict[str, Any], named: str) -> None:
    """A control character in a key, application or resource type, or a time out of
    range, is refused naming the first allocation that holds one."""
    assert named in _refusal(_scenario(**changes))
