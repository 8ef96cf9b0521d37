"""Bad input for the importers: every file under data/bad/ is refused, naming the problem.

YAML files go through parse_config, JSON files and folders through parse_snapshot.
Oversized input is generated here rather than stored in the repository.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_fixtures import FIXTURES
from support.profiles import examples

from dashboard.importers import ImportFailure, parse_config, parse_snapshot
from dashboard.importers.config import MAX_CONFIG_BYTES

BAD = Path(__file__).parents[1] / "data" / "bad"
FIXTURE = FIXTURES / "config" / "queues-nested-gpu.yaml"

# file -> (location, words the message must contain)
EXPECTED: dict[str, tuple[str, list[str]]] = {
    "malformed.yaml": ("line 10", ["invalid YAML"]),
    "truncated.yaml": ("line 9", ["invalid YAML"]),
    "alias-bomb.yaml": ("line 2", ["anchors", "not accepted"]),
    "duplicate-keys.yaml": ("line 9", ['mapping key "max" already defined at line 8']),
    "non-utf8.yaml": ("line 6", ["not UTF-8"]),
    "deep-nesting.yaml": ("line 1", ["nesting deeper than 64 levels"]),
    "negative-quantity.yaml": ("line 8", ["'-4Gi'", "negative"]),
    "decimal-quantity.yaml": ("line 8", ["'1.5Gi'", "decimals are not allowed", "1536Mi"]),
    "absurd-quantity.yaml": ("line 9", ["overflow"]),
    "milli-on-memory.yaml": ("line 8", ["'500m' for memory", "only allowed for vcore"]),
    "dotted-queue-name.yaml": ("line 6", ["invalid queue name 'team.a'", "no dots"]),
    "html-queue-name.yaml": ("line 6", ["invalid queue name '<img src=x onerror=alert(1)>'"]),
    "duplicate-sibling.yaml": ("line 8", ["duplicate queue name 'Batch' under root"]),
    "camelcase-key.yaml": ("line 7", ["field maxApplications not found", "maxapplications"]),
    "nodesortpolicy-string.yaml": ("line 4", ["NodeSortingPolicy", "{type: fair}"]),
    "root-with-resources.yaml": ("line 6", ["root queue must not have resource limits"]),
    "parent-max-below-children-guaranteed.yaml": (
        "line 8",
        ["root.team", "smaller than the sum of its children's guaranteed {vcore: 12}"],
    ),
    "bad-boolean.yaml": ("line 4", ["`maybe` into bool"]),
    "two-documents.yaml": ("line 5", ["more than one YAML document"]),
    "fixed-rule-without-parent-flag.yaml": ("line 15", ["root.tenants", "parent: true"]),
    "empty.yaml": ("empty.yaml", ["defines no partitions"]),
    "configmap-without-queues.yaml": ("line 5", ["no queues.yaml entry"]),
    "deep-nesting.json": ("deep-nesting.json", ["nested deeper than 100 levels"]),
    "wrong-shape.json": ("wrong-shape.json", ["unrecognised shape"]),
    "queues-as-array.json": ("queues-as-array.json", ["ONE object"]),
    "duplicate-key.json": ("duplicate-key.json", ["duplicate key 'maxResource'"]),
    "truncated.json": ("truncated.json: line 1 column 111", ["invalid JSON"]),
    "non-utf8.json": ("non-utf8.json", ["not UTF-8"]),
    "nan-quantity.json": ("nan-quantity.json", ["NaN"]),
    "negative-quantity.json": (
        "negative-quantity.json: children[0].allocatedResource.vcore",
        ["negative quantity -2000"],
    ),
    "absurd-quantity.json": (
        "absurd-quantity.json: children[0].maxResource.memory",
        ["beyond int64"],
    ),
    "html-queue-name.json": (
        "html-queue-name.json: children[0].queuename",
        ["invalid queue name '<script>alert(1)</script>'"],
    ),
    "scenario-unknown-node.json": (
        "scenario-unknown-node.json: allocations[0].node",
        ["unknown node 'node-9'"],
    ),
    "scenario-decimal-quantity.json": (
        "scenario-decimal-quantity.json: allocations[0].resources.vcore",
        ["integer"],
    ),
    "rest-unknown-node": (
        "partition_applications_active.json: [0].allocations[1].nodeId",
        ["allocation 'a-2' on unknown node 'node-7'"],
    ),
}


def load(path: Path) -> object:
    if path.is_dir():
        return parse_snapshot({p.name: p.read_bytes() for p in sorted(path.iterdir())})
    if path.suffix == ".yaml":
        return parse_config(path.read_bytes(), filename=path.name)
    return parse_snapshot({path.name: path.read_bytes()})


def refuse(path: Path) -> ImportFailure:
    with pytest.raises(ImportFailure) as info:
        load(path)
    return info.value


def test_every_bad_file_has_an_expectation() -> None:
    """The table and the folder list the same files (and there are plenty of them)."""
    assert sorted(p.name for p in BAD.iterdir()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 12


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_is_refused_naming_the_problem(name: str) -> None:
    """Refused with the expected location and a message naming what is wrong."""
    location, words = EXPECTED[name]
    failure = refuse(BAD / name)
    assert failure.location == location
    for word in words:
        assert word in failure.message
    assert str(failure) == f"{location}: {failure.message}"


def test_oversized_config_refused_before_parsing() -> None:
    """A config one byte over the cap is refused, even though it is valid YAML."""
    data = FIXTURE.read_bytes()
    data += b"#" * (MAX_CONFIG_BYTES + 1 - len(data))
    with pytest.raises(ImportFailure, match="larger than the 2 MiB limit"):
        parse_config(data)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_random_bytes_fail_cleanly(data: bytes) -> None:
    """Whatever the bytes, the importers answer or raise ImportFailure, nothing else."""
    for parse in (lambda: parse_config(data), lambda: parse_snapshot({"x.json": data})):
        with contextlib.suppress(ImportFailure):
            parse()


TEXT = FIXTURE.read_text()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(min_value=0, max_value=len(TEXT) - 1),
    length=st.integers(min_value=1, max_value=40),
    insert=st.sampled_from(["", ":", "- ", "{", "]", "'", "\n  ", "&a ", "*a", "0.5", "-1", "."]),
)
def test_damaged_fixture_fails_cleanly(start: int, length: int, insert: str) -> None:
    """A real config with a slice replaced either parses or raises ImportFailure."""
    text = TEXT[:start] + insert + TEXT[start + length :]
    failure: ImportFailure | None = None
    try:
        parse_config(text)
    except ImportFailure as exc:
        failure = exc
    assert failure is None or failure.message
