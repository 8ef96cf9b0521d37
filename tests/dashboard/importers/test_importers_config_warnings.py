"""The config import accepts what yunikorn-core accepts, and warns where that means something.

Three rules of the importer used to refuse configs the scheduler runs: a max at
the guarantee while a quota preemption delay is set (the quota-change design's
rule, ``configvalidator.go`` only asks that guaranteed fits inside max), a child
template whose guaranteed is above its max (``template.FromConf`` only parses),
and resource type names that are not Kubernetes resource names
(``NewResourceFromConf`` takes any key). They are warnings now; changes made in
the dashboard are still refused by the design's rule (export and services).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard import models, services
from dashboard.importers import ImportFailure, export_config, parse_config

DATA = Path(__file__).parents[1] / "data"
CLUSTER_B = DATA / "cluster-b" / "config"

# file in data/warn -> (line of the warning, words it must contain)
WARN: dict[str, tuple[str, list[str]]] = {
    "delay-max-equals-guaranteed.yaml": (
        "line 14",
        [
            "root.batch",
            "max memory 16Gi equals guaranteed 16Gi",
            "quota.preemption.delay 10m in force",
            "quota preemption can claim memory in root.batch only down to the guarantee",
        ],
    ),
    "empty-resource-type.yaml": ("line 9", ["root.batch", "empty resource type name"]),
    "malformed-resource-type.yaml": (
        "line 9",
        ["malformed resource type name 'nvidia gpu<b>'", "never limits anything"],
    ),
}


def test_every_warn_file_has_an_expectation() -> None:
    assert sorted(p.name for p in (DATA / "warn").iterdir()) == sorted(WARN)


@pytest.mark.parametrize("name", sorted(WARN))
def test_config_the_scheduler_accepts_is_imported_with_a_warning(name: str) -> None:
    line, words = WARN[name]
    config = parse_config((DATA / "warn" / name).read_bytes(), filename=name)
    found = [w for w in config.warnings if w.startswith(f"{line}: ") and all(x in w for x in words)]
    assert len(found) == 1, config.warnings


def test_malformed_type_name_is_kept_with_its_quantity() -> None:
    config = parse_config((DATA / "warn" / "malformed-resource-type.yaml").read_bytes())
    queue = config.queue("root.batch")
    assert queue is not None
    assert queue.max == {"vcore": 4000, "nvidia gpu<b>": 1}


@pytest.mark.parametrize("name", ["queues-v1.yaml", "queues-v2.yaml", "queues.yaml"])
def test_the_second_clusters_configs_are_accepted(name: str) -> None:
    """All three configs lab-west ran; root.etl's vcore max equals its guarantee (10m delay)."""
    config = parse_config((CLUSTER_B / name).read_bytes(), filename=name)
    etl = config.queue("root.etl")
    assert etl is not None
    assert etl.max == {"vcore": 8000, "memory": 48 * 2**30}
    assert etl.quota_preemption_delay == 600
    rule = [w for w in config.warnings if "equals guaranteed" in w]
    assert len(rule) == 1
    assert rule[0].startswith("line 29: queue root.etl: max vcore 8 equals guaranteed 8")
    assert "memory" not in rule[0].split(":")[2]  # memory max 48Gi is above 32Gi


def test_rule_warns_through_an_inherited_delay() -> None:
    text = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: p\n"
        "            properties: {quota.preemption.delay: 5m}\n"
        "            queues:\n"
        "              - name: c\n"
        "                resources:\n"
        "                  guaranteed: {vcore: 2}\n"
        "                  max: {vcore: 2}\n"
    )
    config = parse_config(text)
    assert any(
        w.startswith("line 12: queue root.p.c: max vcore 2 equals guaranteed 2")
        for w in config.warnings
    )


def test_template_guaranteed_above_max_is_a_warning() -> None:
    text = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: tenants\n"
        "            parent: true\n"
        "            childtemplate:\n"
        "              resources:\n"
        "                guaranteed: {vcore: 4}\n"
        "                max: {vcore: 2}\n"
    )
    config = parse_config(text)
    tenants = config.queue("root.tenants")
    assert tenants is not None
    assert tenants.child_template is not None
    assert tenants.child_template["guaranteed"] == {"vcore": 4000}
    assert any(
        "child template guaranteed {vcore: 4} is larger than its max {vcore: 2}" in w
        for w in config.warnings
    )


@pytest.mark.parametrize(
    "name",
    [
        "child-max-above-parent-max.yaml",
        "guaranteed-above-max.yaml",
        "quota-delay-under-resources.yaml",
    ],
)
def test_what_the_scheduler_refuses_is_still_refused(fixtures_dir: Path, name: str) -> None:
    with pytest.raises(ImportFailure):
        parse_config((fixtures_dir / "config" / "invalid" / name).read_bytes(), filename=name)


# ------------------------------------------------------------------ changes made in the dashboard


def test_export_of_a_change_elsewhere_keeps_the_case_the_cluster_runs() -> None:
    """Lowering root.reports in lab-west's config is fine although root.etl has max = g."""
    config = parse_config((CLUSTER_B / "queues.yaml").read_bytes())
    text = export_config(config, overrides={"root.reports": {"vcore": 10000, "memory": 48 * 2**30}})
    again = parse_config(text)
    assert again.queue("root.reports").max == {"vcore": 10000, "memory": 48 * 2**30}  # type: ignore[union-attr]


def test_export_refuses_a_change_that_puts_max_at_the_guarantee() -> None:
    config = parse_config((CLUSTER_B / "queues.yaml").read_bytes())
    with pytest.raises(ImportFailure) as info:
        export_config(config, overrides={"root.etl": {"vcore": 8000, "memory": 32 * 2**30}})
    assert info.value.location == "overrides"
    assert "root.etl: max memory 32Gi must be greater than guaranteed 32Gi" in info.value.message


def test_export_refuses_a_delay_that_brings_the_rule_into_force() -> None:
    """root.sandbox has no guarantee, but a delay on a queue with max = g is refused."""
    text = (
        (CLUSTER_B / "queues.yaml")
        .read_text()
        .replace(
            "              max: {vcore: 8, memory: 32Gi}\n          - name: tenants",
            "              guaranteed: {vcore: 8}\n              max: {vcore: 8, memory: 32Gi}\n"
            "          - name: tenants",
        )
    )
    config = parse_config(text)
    assert not [w for w in config.warnings if "root.sandbox" in w]  # no delay yet
    with pytest.raises(ImportFailure) as info:
        export_config(config, delays={"root.sandbox": 300})
    assert info.value.location == "delays"
    assert "root.sandbox: max vcore 8 must be greater than guaranteed 8" in info.value.message


@pytest.mark.django_db
def test_service_imports_the_config_and_stores_the_warning() -> None:
    result = services.import_config(
        (CLUSTER_B / "queues.yaml").read_bytes(), filename="queues.yaml"
    )
    (version,) = result.versions
    assert any("root.etl: max vcore 8 equals guaranteed 8" in w for w in version.warnings)
    assert models.Alert.objects.filter(
        kind=models.Alert.Kind.IMPORT_WARNING, message__contains="equals guaranteed"
    ).exists()


@pytest.mark.django_db
def test_service_refuses_a_new_change_at_the_guarantee() -> None:
    """The quota-change path keeps the design's rule for changes made in the dashboard."""
    services.import_config((CLUSTER_B / "queues.yaml").read_bytes(), filename="queues.yaml")
    partition = models.Partition.objects.get(name="default")
    with pytest.raises(services.ServiceError) as info:
        services.schedule_quota_change(
            partition, "root.etl", new_max={"vcore": 8000, "memory": 32 * 2**30}
        )
    assert info.value.field == "new_max"
    assert "must be greater than its guarantee" in info.value.message
    assert not models.QuotaChange.objects.exists()
