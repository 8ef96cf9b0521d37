"""dashboard.importers.config: YuniKorn queue configs as the scheduler reads them."""

from __future__ import annotations

import json

import pytest
from shared_fixtures import FIXTURES

from dashboard.importers import ImportFailure, parse_config, to_queue_config
from dashboard.importers.config import MAX_CONFIG_BYTES, ConfigImport
from dashboard.importers.config.diff import is_tighter
from dashboard.importers.config.reader import config_checksum

CONFIG = FIXTURES / "config"
GI = 2**30
VALID = sorted(p.name for p in CONFIG.glob("*.yaml"))
PITFALLS = sorted(p.name for p in (CONFIG / "pitfalls").glob("*.yaml"))


def load(name: str) -> ConfigImport:
    return parse_config((CONFIG / name).read_bytes(), filename=name)


@pytest.mark.parametrize("name", VALID)
def test_every_valid_fixture_imports(name: str) -> None:
    """Each config under config/ is accepted, with a root queue per partition."""
    config = load(name)
    assert config.partitions
    assert all(p.root.path == "root" and p.root.parent is True for p in config.partitions)
    assert config.checksum == config_checksum(config.text)


def test_nested_gpu_values() -> None:
    """The live acme-ml config: real numbers in scheduler units, flags, delays, template."""
    config = load("queues-nested-gpu.yaml")
    assert [p.name for p in config.partitions] == ["default"]
    part = config.partition()
    assert part.quota_preemption_enabled is True
    assert part.preemption_enabled is True
    paths = [q.path for q in part.queues()]
    assert paths == [
        "root",
        "root.production",
        "root.production.inference",
        "root.production.training",
        "root.research",
        "root.research.nlp",
        "root.batch",
        "root.monitoring",
    ]
    batch = config.queue("root.batch")
    assert batch is not None
    assert batch.max == {"vcore": 10000, "memory": 48 * GI}
    assert batch.guaranteed is None
    assert batch.max_applications == 20
    assert batch.quota_preemption_delay == 300.0
    assert batch.properties["priority.offset"] == "-100"
    assert batch.is_leaf is True
    production = config.queue("root.production")
    assert production is not None
    assert production.guaranteed == {"vcore": 24000, "memory": 96 * GI, "nvidia.com/gpu": 4}
    assert production.max == {"vcore": 40000, "memory": 160 * GI, "nvidia.com/gpu": 4}
    assert production.parent is True
    assert production.is_leaf is False
    training = config.queue("root.production.training")
    assert training is not None
    assert training.quota_preemption_delay == 1800.0
    research = config.queue("root.research")
    nlp = config.queue("root.research.nlp")
    assert research is not None
    assert nlp is not None
    assert research.quota_preemption_delay == 600.0
    # inherited as yunikorn-core does (queue.go mergeProperties), not as the site doc says
    assert nlp.quota_preemption_delay == 600.0
    assert nlp.properties == {}
    assert research.child_template == {
        "max_applications": 4,
        "properties": {"application.sort.policy": "fifo"},
        "guaranteed": {"vcore": 2000, "memory": 8 * GI},
        "max": {"vcore": 8000, "memory": 32 * GI},
    }
    monitoring = config.queue("root.monitoring")
    assert monitoring is not None
    assert monitoring.guaranteed == {"vcore": 1000, "memory": GI}
    assert monitoring.quota_preemption_delay == 0.0
    assert len(part.placement_rules) == 3
    assert part.placement_rules[2]["parent"] == {"name": "fixed", "value": "root.research"}
    assert config.warnings == ()


def test_checksum_is_the_schedulers() -> None:
    """The checksum equals the one /ws/v1/config reports for the live config."""
    rest_config = json.loads((FIXTURES / "rest" / "config.json").read_text())
    assert load("queues-nested-gpu.yaml").checksum == rest_config["Checksum"]


def test_small_config_quantity_syntax() -> None:
    """4000m is 4 cores, 8G is decimal bytes, 16Gi binary; delay 15m."""
    config = load("queues-small.yaml")
    adhoc = config.queue("root.adhoc")
    default = config.queue("root.default")
    assert adhoc is not None
    assert default is not None
    assert adhoc.max == {"vcore": 4000, "memory": 8_000_000_000}
    assert default.guaranteed == {"vcore": 2000, "memory": 4 * GI}
    assert default.max == {"vcore": 8000, "memory": 16 * GI}
    assert default.quota_preemption_delay == 900.0
    assert adhoc.quota_preemption_delay == 0.0


def test_templates_and_limits_config() -> None:
    """Two partitions, nested templates, limits; the gpu partition has preemption off."""
    config = load("queues-templates-limits.yaml")
    default, gpu = config.partitions
    assert (default.name, gpu.name) == ("default", "gpu")
    assert gpu.preemption_enabled is False
    assert gpu.quota_preemption_enabled is False
    assert default.quota_preemption_enabled is True
    vision = default.queue("root.tenants.vision")
    shared = default.queue("root.shared")
    tenants = default.queue("root.tenants")
    assert vision is not None
    assert shared is not None
    assert tenants is not None
    assert vision.quota_preemption_delay == 9000.0  # 2h30m
    assert shared.quota_preemption_delay == 90.0
    assert tenants.quota_preemption_delay == 3600.0
    assert tenants.max == {"vcore": 192000, "memory": 768 * GI, "nvidia.com/gpu": 16}
    assert vision.parent is True
    assert vision.is_leaf is False
    assert vision.children == ()
    assert vision.child_template is not None
    assert vision.child_template["max"] == {"vcore": 24000, "memory": 96 * GI, "nvidia.com/gpu": 4}
    assert vision.raw["limits"][0]["maxresources"] == {"nvidia.com/gpu": "8", "vcore": "64"}
    exclusive = gpu.queue("root.exclusive")
    assert exclusive is not None
    assert exclusive.max == {
        "nvidia.com/gpu": 8,
        "vcore": 64000,
        "memory": 512 * GI,
    }


def test_configmap_form() -> None:
    """The ConfigMap carries exactly the live config; other keys become extra settings."""
    cm = load("configmap-yunikorn-configs.yaml")
    plain = load("queues-nested-gpu.yaml")
    assert cm.source_format == "configmap"
    assert cm.partitions == plain.partitions
    assert cm.text == plain.text
    assert cm.checksum == plain.checksum
    assert cm.extra == {
        "log.level": "INFO",
        "service.enableConfigHotRefresh": "true",
        "service.placeholderImage": "registry.k8s.io/pause:3.10",
        "service.schedulingInterval": "1s",
    }
    assert cm.configmap == {"name": "yunikorn-configs", "namespace": "yunikorn"}


def test_configmap_errors_name_the_configmap_line() -> None:
    """A bad quantity inside data.queues.yaml is reported at its line in the ConfigMap file."""
    text = (CONFIG / "configmap-yunikorn-configs.yaml").read_text()
    bad = text.replace("max: {vcore: 10, memory: 48Gi}", "max: {vcore: 10, memory: 4.5Gi}")
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "4.5Gi" in ln)
    with pytest.raises(ImportFailure) as info:
        parse_config(bad)
    assert info.value.location == f"line {line}"
    assert "4.5Gi" in info.value.message
    assert "decimals" in info.value.message


@pytest.mark.parametrize(
    ("name", "line", "needles"),
    [
        (
            "child-max-above-parent-max.yaml",
            20,
            ["root.research.nlp", "does not fit", "root.research", "vcore: 6"],
        ),
        (
            "guaranteed-above-max.yaml",
            13,
            ["root.batch", "guaranteed {vcore: 8, memory: 32Gi} is larger than its max"],
        ),
        (
            "quota-delay-under-resources.yaml",
            15,
            [
                "field quota.preemption.delay not found in type configs.Resources",
                "properties: {quota.preemption.delay: 2h}",
            ],
        ),
    ],
)
def test_every_invalid_fixture_is_refused(name: str, line: int, needles: list[str]) -> None:
    """Each config under config/invalid/ is refused at the right line, naming the problem."""
    with pytest.raises(ImportFailure) as info:
        load(f"invalid/{name}")
    assert info.value.location == f"line {line}"
    for needle in needles:
        assert needle in info.value.message


def test_invalid_fixtures_are_all_covered() -> None:
    """No file under config/invalid/ escapes the table above."""
    assert sorted(p.name for p in (CONFIG / "invalid").glob("*.yaml")) == [
        "child-max-above-parent-max.yaml",
        "guaranteed-above-max.yaml",
        "quota-delay-under-resources.yaml",
    ]


@pytest.mark.parametrize("name", PITFALLS)
def test_every_pitfall_imports_with_a_warning(name: str) -> None:
    """Accepted, but a warning says quota preemption would never fire."""
    config = load(f"pitfalls/{name}")
    assert any("never fires" in w for w in config.warnings), config.warnings


def test_pitfall_bare_number_delay() -> None:
    """'7200' is kept as the property text, counts as 0 s, and the warning gives the fix."""
    config = load("pitfalls/quota-delay-integer-seconds.yaml")
    queue = config.queue("root.queuea")  # names are lower-cased like the scheduler does
    assert queue is not None
    assert queue.properties == {"quota.preemption.delay": "7200"}
    assert queue.quota_preemption_delay == 0.0
    assert queue.max == {"memory": 10_000_000_000}
    (warning,) = config.warnings
    assert warning.startswith("line 17: queue root.queuea")
    assert "7200s or 2h" in warning


def test_pitfall_delay_without_partition_flag() -> None:
    """The delay parses (15m) but the partition flag is absent: warned, queue named."""
    config = load("pitfalls/quota-delay-without-partition-flag.yaml")
    part = config.partition()
    assert part.quota_preemption_enabled is False
    prod = part.queue("root.prod")
    assert prod is not None
    assert prod.quota_preemption_delay == 900.0
    (warning,) = config.warnings
    assert "root.prod (15m)" in warning
    assert "absent (default false)" in warning


def cfg(queues: str, *, flag: str = "true", extra: str = "") -> str:
    """A one-partition config around an indented queue list under root."""
    return (
        "partitions:\n"
        "  - name: default\n"
        f"    preemption:\n      quotapreemptionenabled: {flag}\n"
        f"{extra}"
        "    queues:\n"
        "      - name: root\n"
        "        queues:\n" + queues
    )


def test_yaml_12_names_stay_strings_and_are_lowercased() -> None:
    """NO, on, yes and 010 are queue names, not booleans or numbers (YAML 1.2)."""
    text = cfg(
        "          - name: NO\n          - name: on\n          - name: Yes\n          - name: 010\n"
    )
    part = parse_config(text).partition()
    assert [q.name for q in part.root.children] == ["no", "on", "yes", "010"]


def test_yaml_11_boolean_words_accepted_for_bool_fields() -> None:
    """yaml.v3 accepts yes/on for a Go bool field; so do we."""
    text = cfg("          - name: a\n", flag="yes")
    assert parse_config(text).partition().quota_preemption_enabled is True


def test_yaml_11_directive_does_not_turn_names_into_booleans() -> None:
    """Even under %YAML 1.1 the scheduler (yaml.v3) reads a name as its text."""
    text = "%YAML 1.1\n---\n" + cfg("          - name: off\n")
    assert parse_config(text).partition().root.children[0].name == "off"


def test_root_with_empty_max_is_refused() -> None:
    """max: {} on root is a set (empty) map for Go, so the scheduler refuses it."""
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n"
    with pytest.raises(ImportFailure, match="root queue must not have resource limits"):
        parse_config(text + "        resources: {max: {}}\n")
    assert parse_config(text + "        resources: {max: }\n").partition().root.max is None


def test_root_inserted_when_missing() -> None:
    """Several top-level queues get a root above them, as configvalidator does."""
    text = "partitions:\n  - name: default\n    queues:\n      - name: a\n      - name: b\n"
    part = parse_config(text).partition()
    assert [q.path for q in part.queues()] == ["root", "root.a", "root.b"]


def test_partition_name_default_normalised() -> None:
    """An empty or DEFAULT partition name means default."""
    text = "partitions:\n  - name: DEFAULT\n    queues:\n      - name: root\n"
    assert parse_config(text).partitions[0].name == "default"


def test_all_zero_max_is_not_set_with_warning() -> None:
    """max {nvidia.com/gpu: 0} is ignored by the scheduler: imported as not set, warned."""
    text = cfg(
        "          - name: a\n            resources:\n              max: {nvidia.com/gpu: 0}\n"
    )
    config = parse_config(text)
    queue = config.queue("root.a")
    assert queue is not None
    assert queue.max is None
    assert any("no positive value" in w and "root.a" in w for w in config.warnings)


def test_seed_rule_applies_through_inherited_delay() -> None:
    """A child inheriting a delay is warned about too (the scheduler accepts it)."""
    text = cfg(
        "          - name: p\n"
        "            properties: {quota.preemption.delay: 5m}\n"
        "            queues:\n"
        "              - name: c\n"
        "                resources:\n"
        "                  guaranteed: {vcore: 2}\n"
        "                  max: {vcore: 2}\n"
    )
    config = parse_config(text)
    assert any("root.p.c: max vcore 2 equals guaranteed 2" in w for w in config.warnings)


def test_seed_rule_does_not_apply_without_delay() -> None:
    """Equal max and guaranteed is fine for the scheduler when no delay is in force."""
    text = cfg(
        "          - name: a\n"
        "            resources:\n"
        "              guaranteed: {vcore: 2}\n"
        "              max: {vcore: 2}\n"
    )
    queue = parse_config(text).queue("root.a")
    assert queue is not None
    assert queue.max == queue.guaranteed == {"vcore": 2000}


def test_unparsable_own_delay_is_not_inherited_from_parent() -> None:
    """An own bad delay gives 0 s (Go merges the child's text over the parent's)."""
    text = cfg(
        "          - name: p\n"
        "            properties: {quota.preemption.delay: 10m}\n"
        "            queues:\n"
        "              - name: c\n"
        "                properties: {quota.preemption.delay: 10 minutes}\n"
    )
    config = parse_config(text)
    child = config.queue("root.p.c")
    assert child is not None
    assert child.quota_preemption_delay == 0.0
    assert any("root.p.c" in w and "not a Go duration" in w for w in config.warnings)


def test_short_delay_and_template_delay_warnings() -> None:
    """Delays under a minute and delays in child templates are warned about."""
    text = cfg(
        "          - name: a\n"
        "            properties: {quota.preemption.delay: 15s}\n"
        "          - name: b\n"
        "            parent: true\n"
        "            childtemplate:\n"
        "              properties: {quota.preemption.delay: 5m}\n"
    )
    warnings = parse_config(text).warnings
    assert any("shorter than a minute" in w for w in warnings)
    assert any("dynamic and never run quota preemption" in w for w in warnings)


def test_unknown_key_in_queue_is_refused() -> None:
    """Strict decoding: a misspelt key names the Go type and line."""
    text = cfg("          - name: a\n            propertes: {x: y}\n")
    with pytest.raises(ImportFailure) as info:
        parse_config(text)
    assert info.value.location == "line 9"
    assert "field propertes not found in type configs.QueueConfig" in info.value.message


def test_size_is_capped_before_parsing() -> None:
    """A config over 2 MiB is refused without being parsed."""
    data = b"#" * (MAX_CONFIG_BYTES + 1)
    with pytest.raises(ImportFailure, match="larger than the 2 MiB limit"):
        parse_config(data)


def test_to_queue_config_for_the_engine() -> None:
    """The engine tree: children by name, own properties, effective delay."""
    tree = to_queue_config(load("queues-nested-gpu.yaml").partition())
    assert [c.name for c in tree.children] == ["batch", "monitoring", "production", "research"]
    research = tree.children[3]
    assert research.children[0].name == "nlp"
    assert research.children[0].quota_preemption_delay == 600.0
    assert research.properties["preemption.policy"] == "fence"
    assert tree.children[0].max == {"vcore": 10000, "memory": 48 * GI}


def test_diff_previous_to_live_is_the_fired_decrease() -> None:
    """previous -> live: only root.batch max vcore 14 -> 10, a decrease."""
    changes = load("queues-nested-gpu-previous.yaml").diff(load("queues-nested-gpu.yaml"))
    assert [(c.queue, c.field, c.kind, c.is_decrease) for c in changes] == [
        ("root.batch", "max", "changed", True)
    ]
    (change,) = changes
    assert change.old == {"vcore": 14000, "memory": 48 * GI}
    assert change.new == {"vcore": 10000, "memory": 48 * GI}
    assert change.describe() == "root.batch: max vcore 14 -> 10 (decrease)"


def test_diff_live_to_proposed() -> None:
    """live -> proposed: three decreases and the research delay (inherited by nlp)."""
    changes = load("queues-nested-gpu.yaml").diff(load("queues-nested-gpu-proposed.yaml"))
    summary = [(c.queue, c.field, c.is_decrease) for c in changes]
    assert summary == [
        ("root.batch", "max", True),
        ("root.research", "max", True),
        ("root.research", "quota_preemption_delay", False),
        ("root.research.nlp", "max", True),
        ("root.research.nlp", "quota_preemption_delay", False),
    ]
    delay = changes[2]
    assert (delay.old, delay.new) == (600.0, 900.0)
    assert delay.describe() == "root.research: quota preemption delay 10m -> 15m"
    assert changes[1].new == {"vcore": 6000, "memory": 24 * GI, "nvidia.com/gpu": 1}
    assert changes[0].to_dict()["text"] == (
        "root.batch: max memory 48Gi -> 40Gi, vcore 10 -> 8 (decrease)"
    )


def test_diff_queue_added_removed_and_flag() -> None:
    """Added/removed queues and the partition flag are changes too."""
    old = parse_config(cfg("          - name: a\n          - name: b\n"))
    new = parse_config(
        cfg(
            "          - name: a\n          - name: c\n            resources: {max: {vcore: 1}}\n",
            flag="false",
        )
    )
    changes = [(c.queue, c.field, c.kind, c.is_decrease) for c in old.diff(new)]
    assert changes == [
        ("", "quota_preemption_enabled", "changed", False),
        ("root.b", "queue", "removed", False),
        ("root.c", "queue", "added", True),
    ]


@pytest.mark.parametrize(
    ("old", "new", "tighter"),
    [
        ({"vcore": 14000}, {"vcore": 10000}, True),
        ({"vcore": 10000}, {"vcore": 14000}, False),
        (None, {"memory": 1}, True),
        ({"memory": 100}, None, False),
        ({"memory": 100}, {"memory": 200, "vcore": 100}, True),  # a newly limited type
        ({"memory": 100, "vcore": 100}, {"memory": 100}, False),
    ],
)
def test_is_tighter(old: dict[str, int] | None, new: dict[str, int] | None, tighter: bool) -> None:
    """Any tightening counts (engine.md 5); pure loosening does not."""
    assert is_tighter(old, new) is tighter
