"""An allocation is named by its pod (namespace/name) first, its key second, with its
application's user: the pod read from the allocation's tags is stored with its span."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dashboard import models, services
from dashboard.display import allocation_label

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
UID = "9d76a48e-1c2f-4b3a-8e9d-0123456789ab"


def alloc(key: str, app: str, pod: str | None) -> dict[str, Any]:
    a: dict[str, Any] = {
        "key": key,
        "app": app,
        "queue": "root.a",
        "node": "n1",
        "resources": {"vcore": 100},
        "created": 1788000000.0,
    }
    if pod:
        a["pod"] = pod
    return a


def store(allocations: list[dict[str, Any]], i: int) -> models.ClusterSnapshot:
    at = T0 + timedelta(minutes=i)
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.REST,
        captured_at=at,
        scenario={
            "now": at.timestamp(),
            "queues": {"name": "root", "children": [{"name": "a"}]},
            "nodes": [{"id": "n1", "capacity": {"vcore": 10**6}}],
            "allocations": allocations,
        },
        applications=[
            {"app_id": "spark-1", "queue": "root.a", "state": "Running", "user": "alice"},
            {"app_id": "plain", "queue": "root.a", "state": "Running"},
        ],
        now=at,
    )


def test_the_pod_and_the_user_name_an_allocation() -> None:
    snap = store([alloc(UID, "spark-1", "batch/etl-driver"), alloc("k2", "plain", None)], 0)
    names = services.allocation_names(snap, [UID, "k2", "gone"])
    assert names[UID].pod == "batch/etl-driver"
    assert (names[UID].namespace, names[UID].pod_name) == ("batch", "etl-driver")
    assert names[UID].user == "alice"
    assert names[UID].label == "batch/etl-driver (9d76a48e…)"
    assert names[UID].as_fields() == {"pod": "etl-driver", "namespace": "batch", "user": "alice"}
    assert names["k2"].label == "k2"
    assert names["k2"].user == ""
    assert names["gone"] == services.AllocationName("gone")
    assert services.allocation_names(None, [UID])[UID].label == UID


def test_the_pod_is_not_part_of_the_span_identity() -> None:
    """A later poll of the same allocation extends its span (the pod's name never
    changes for its uid), and keeps its pod."""
    store([alloc(UID, "spark-1", "batch/etl-driver")], 0)
    second = store([alloc(UID, "spark-1", "batch/etl-driver")], 1)
    assert models.AllocationSpan.objects.count() == 1
    assert services.allocation_names(second, [UID])[UID].pod == "batch/etl-driver"


def test_the_label_without_a_pod_is_the_whole_key() -> None:
    assert allocation_label(UID) == UID
    assert allocation_label("short", "ns/p") == "ns/p (short)"
