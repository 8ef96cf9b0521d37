"""dashboard.importers.export: configs written back read the same; overrides change only the max."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from shared_fixtures import FIXTURES

from dashboard.importers import (
    ConfigImport,
    ImportFailure,
    QueueSpec,
    export_config,
    export_configmap,
    parse_config,
    scenario_json,
)

CONFIG = FIXTURES / "config"
VALID = sorted(p.name for p in CONFIG.glob("*.yaml")) + sorted(
    f"pitfalls/{p.name}" for p in (CONFIG / "pitfalls").glob("*.yaml")
)
GI = 2**30


def load(name: str) -> ConfigImport:
    return parse_config((CONFIG / name).read_bytes(), filename=name)


def queues_by_path(config: ConfigImport, partition: str = "default") -> dict[str, QueueSpec]:
    return {q.path: q for q in config.partition(partition).queues()}


@pytest.mark.parametrize("name", VALID)
def test_exported_text_reads_back_equal(name: str) -> None:
    """export_config(config) is parsed back to the same partitions, warnings and checksum."""
    config = load(name)
    again = parse_config(export_config(config))
    assert again.partitions == config.partitions
    assert again.warnings == config.warnings


@pytest.mark.parametrize("name", VALID)
def test_generated_from_specs_reads_back_equal(name: str) -> None:
    """YAML generated from bare PartitionSpecs (no original text) reads back equal."""
    config = load(name)
    assert parse_config(export_config(list(config.partitions))).partitions == config.partitions


@pytest.mark.parametrize("name", VALID)
def test_configmap_export_reads_back_equal(name: str) -> None:
    """The ConfigMap form reads back to the same partitions, keeping extra settings."""
    config = load(name)
    again = parse_config(export_configmap(config))
    assert again.source_format == "configmap"
    assert again.partitions == config.partitions
    assert again.extra == config.extra


def test_unchanged_text_is_kept_byte_for_byte() -> None:
    """Without overrides the admin's file is returned as it was, comments and all."""
    config = load("queues-nested-gpu.yaml")
    assert export_config(config) == config.text


def test_override_lowers_one_max_and_changes_nothing_else() -> None:
    """The config with root.batch lowered reads back with the new max and nothing else changed."""
    config = load("queues-nested-gpu.yaml")
    new_max = {"vcore": 8000, "memory": 40 * GI}
    text = export_config(config, overrides={"root.batch": new_max})
    again = parse_config(text)
    old_q, new_q = queues_by_path(config), queues_by_path(again)
    assert new_q.keys() == old_q.keys()
    assert new_q["root.batch"].max == new_max
    for path, before in old_q.items():
        after = new_q[path]
        if path == "root.batch":
            assert dataclasses.replace(after, max=before.max, raw=before.raw) == before
        elif path == "root":
            # root holds the tree; compare it without its children
            assert dataclasses.replace(after, children=()) == dataclasses.replace(
                before, children=()
            )
        else:
            assert after == before
    assert [c.describe() for c in config.diff(again)] == [
        "root.batch: max memory 48Gi -> 40Gi, vcore 10 -> 8 (decrease)"
    ]
    # comments and the other queues' text are kept: only the batch max line differs
    changed = [
        (a, b) for a, b in zip(config.text.splitlines(), text.splitlines(), strict=True) if a != b
    ]
    assert changed == [
        (
            "              max: {vcore: 10, memory: 48Gi}",
            "              max: {vcore: 8, memory: 40Gi}",
        )
    ]


def test_override_from_specs() -> None:
    """Overrides also work on generated YAML (no original text)."""
    config = load("queues-nested-gpu.yaml")
    text = export_config(list(config.partitions), overrides={"root.batch": {"vcore": 8000}})
    again = parse_config(text)
    assert [c.describe() for c in config.diff(again)] == [
        "root.batch: max memory 48Gi -> unlimited, vcore 10 -> 8 (decrease)"
    ]


def test_override_matching_proposed_fixture() -> None:
    """Lowering research, nlp and batch gives the proposed fixture's max values."""
    config = load("queues-nested-gpu.yaml")
    proposed = load("queues-nested-gpu-proposed.yaml")
    overrides = {
        path: proposed.queue(path).max  # type: ignore[union-attr]  # the paths exist
        for path in ("root.research", "root.research.nlp", "root.batch")
    }
    again = parse_config(export_config(config, overrides=overrides))
    for path, new_max in overrides.items():
        assert again.queue(path).max == new_max  # type: ignore[union-attr]


def test_override_refused_when_the_scheduler_would_refuse() -> None:
    """Lowering research below nlp's max gives the config/invalid fixture's error."""
    with pytest.raises(ImportFailure) as info:
        export_config(load("queues-nested-gpu.yaml"), overrides={"root.research": {"vcore": 6000}})
    assert info.value.location == "overrides"
    assert "root.research.nlp" in info.value.message
    assert "does not fit" in info.value.message


def test_override_refused_by_seed_rule() -> None:
    """A max at the guarantee with a delay in force is refused (quota-change seed)."""
    with pytest.raises(ImportFailure, match="must be greater than guaranteed"):
        export_config(
            load("queues-nested-gpu.yaml"),
            overrides={"root.production.training": {"vcore": 16000}},
        )


def test_override_adds_and_removes_a_max() -> None:
    """A queue without a max gets one; None removes it."""
    config = load("queues-nested-gpu.yaml")
    added = parse_config(export_config(config, overrides={"root.monitoring": {"vcore": 2000}}))
    assert added.queue("root.monitoring").max == {"vcore": 2000}  # type: ignore[union-attr]
    removed = parse_config(export_config(config, overrides={"root.batch": None}))
    assert removed.queue("root.batch").max is None  # type: ignore[union-attr]


def test_override_unknown_queue() -> None:
    """An unknown queue path is refused."""
    with pytest.raises(ImportFailure, match=r"unknown queue 'root\.nope'"):
        export_config(load("queues-small.yaml"), overrides={"root.nope": {"vcore": 1000}})


def test_override_in_second_partition() -> None:
    """Overrides apply to the named partition only."""
    config = load("queues-templates-limits.yaml")
    again = parse_config(
        export_config(config, overrides={"root.exclusive": {"vcore": 32000}}, partition="gpu")
    )
    assert again.queue("root.exclusive", "gpu").max == {"vcore": 32000}  # type: ignore[union-attr]
    assert again.partition("default") == config.partition("default")


def test_configmap_export_shape() -> None:
    """Metadata and settings come from the imported ConfigMap; queues.yaml is a literal block."""
    text = export_configmap(load("configmap-yunikorn-configs.yaml"))
    assert text.startswith("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yunikorn-configs\n")
    assert "  log.level: INFO\n" in text
    assert "  queues.yaml: |\n" in text


def test_scenario_json_validates_the_request() -> None:
    """A request for an unknown queue is refused naming the field."""
    scenario = {
        "queues": {"name": "root", "children": [{"name": "a"}]},
        "nodes": [],
        "allocations": [],
    }
    doc = scenario_json(scenario, {"type": "resources", "queue": "root.a"})
    assert doc["request"] == {"type": "resources", "queue": "root.a"}
    assert "request" not in scenario
    with pytest.raises(ImportFailure) as info:
        scenario_json(scenario, {"type": "resources", "queue": "root.b"})
    assert info.value.location == "request.queue"


def test_delay_replaces_the_queue_property_and_changes_nothing_else() -> None:
    """A new delay for root.batch edits only its quota.preemption.delay line."""
    config = load("queues-nested-gpu.yaml")
    text = export_config(config, delays={"root.batch": 1800})
    again = parse_config(text)
    assert again.queue("root.batch").quota_preemption_delay == 1800  # type: ignore[union-attr]
    assert [c.describe() for c in config.diff(again)] == [
        "root.batch: quota preemption delay 5m -> 30m"
    ]
    changed = [
        (a, b) for a, b in zip(config.text.splitlines(), text.splitlines(), strict=True) if a != b
    ]
    assert changed == [
        ("              quota.preemption.delay: 5m", "              quota.preemption.delay: 30m")
    ]


def test_delay_and_max_together() -> None:
    """The quota-change hand-back: one queue's max and delay in one edit."""
    config = load("queues-nested-gpu.yaml")
    again = parse_config(
        export_config(
            config, overrides={"root.batch": {"vcore": 8000}}, delays={"root.batch": 90.5}
        )
    )
    batch = again.queue("root.batch")
    assert batch is not None
    assert batch.max == {"vcore": 8000}
    assert batch.quota_preemption_delay == 90.5
    assert batch.properties["quota.preemption.delay"] == "1m30.5s"


def test_delay_adds_properties_where_a_queue_has_none_and_children_inherit() -> None:
    """root.research.nlp has no properties: they are added after its resources."""
    config = load("queues-nested-gpu.yaml")
    text = export_config(config, delays={"root.research.nlp": 120})
    again = parse_config(text)
    assert again.queue("root.research.nlp").quota_preemption_delay == 120  # type: ignore[union-attr]
    nlp = text.index("- name: nlp")
    block = text[nlp : text.index("- name: batch")]
    assert block.index("resources:") < block.index("properties:")
    assert "quota.preemption.delay: 2m" in block
    # on a parent, children without their own delay inherit the new one
    parent = parse_config(export_config(config, delays={"root.research": 3600}))
    assert parent.queue("root.research.nlp").quota_preemption_delay == 3600  # type: ignore[union-attr]


def test_delay_from_specs() -> None:
    """Generated YAML (no original text) carries the delay too."""
    config = load("queues-nested-gpu.yaml")
    again = parse_config(export_config(list(config.partitions), delays={"root.monitoring": 600}))
    assert again.queue("root.monitoring").quota_preemption_delay == 600  # type: ignore[union-attr]
    assert again.queue("root.batch").quota_preemption_delay == 300  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("delays", "words"),
    [
        ({"root.nope": 60}, "unknown queue 'root.nope'"),
        ({"root.batch": -1}, "must not be negative"),
        ({"root.batch": float("nan")}, "must be a finite number"),
        ({"root.batch": 1e12}, "longer than the longest delay"),
        ({"root.batch": 1e-12}, "below 1ns"),
        ({"root.batch": "10m"}, "must be a number of seconds"),
        ({"root.batch": True}, "must be a number of seconds"),
    ],
)
def test_bad_delays_are_refused_naming_the_queue(delays: dict[str, Any], words: str) -> None:
    with pytest.raises(ImportFailure) as info:
        export_config(load("queues-nested-gpu.yaml"), delays=delays)
    assert info.value.location == "delays"
    assert words in info.value.message
    assert next(iter(delays)) in info.value.message


def test_delay_refused_where_a_max_does_not_exceed_the_guarantee() -> None:
    """root.production's gpu max equals its guarantee: a delay there is refused (seed rule)."""
    with pytest.raises(ImportFailure, match="must be greater than guaranteed"):
        export_config(load("queues-nested-gpu.yaml"), delays={"root.production": 600})
