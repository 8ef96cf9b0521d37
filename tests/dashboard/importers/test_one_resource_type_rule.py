"""Issue 37, item 11: one rule for resource type names: a scenario import refuses what the
what-if (and the config and REST imports) refuse, such as ``=evil``, and accepts the
Kubernetes names they accept."""

from __future__ import annotations

from typing import Any

import pytest
from scenarios import T0, small_scenario

from dashboard import models, services
from dashboard.plumbing.errors import ServiceError
from dashboard.services.limits import validate_resource

pytestmark = pytest.mark.django_db


def _store(doc: dict[str, Any]) -> models.ClusterSnapshot:
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0,
        scenario=doc,
        now=T0,
    )


@pytest.mark.parametrize("name", ["=evil", "a b", "-gpu"])
def test_a_scenario_import_refuses_what_the_what_if_refuses(name: str) -> None:
    with pytest.raises(ServiceError) as whatif:
        validate_resource({name: 1}, "new_max")
    doc = small_scenario()
    doc["queues"]["children"][0]["max"] = {"vcore": 9000, name: 5}
    with pytest.raises(ServiceError) as imported:
        _store(doc)
    assert "malformed resource type name" in whatif.value.message
    assert "malformed resource type name" in imported.value.message
    assert not models.ClusterSnapshot.objects.exists()
    doc = small_scenario()
    doc["allocations"][0]["resources"] = {"vcore": 1000, name: 1}
    with pytest.raises(ServiceError):
        _store(doc)


def test_both_accept_a_kubernetes_resource_name() -> None:
    assert validate_resource({"nvidia.com/gpu": 1}, "new_max") == {"nvidia.com/gpu": 1}
    doc = small_scenario()
    doc["queues"]["children"][0]["max"] = {"vcore": 9000, "nvidia.com/gpu": 5}
    assert _store(doc).pk is not None
