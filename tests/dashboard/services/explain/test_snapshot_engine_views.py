"""Read-only engine views of a stored snapshot used by the pages: preemptable, victim reasons."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard import models, services


@pytest.mark.django_db
def test_preemptable_per_queue(snapshot: models.ClusterSnapshot) -> None:
    """Usage above guaranteed is preemptable; a queue with no guarantee and no usage has none."""
    preemptable = services.queue_preemptable(snapshot)
    assert preemptable["root.a"] == {"vcore": 6000}  # usage 8 cores, guaranteed 2
    assert preemptable["root.a.x"] == {"vcore": 4000}  # no guarantee: all of it
    assert preemptable["root.b"] is None
    assert set(preemptable) == set(snapshot.queues.values_list("path", flat=True))


@pytest.mark.django_db
def test_explain_victims_of_a_queue(snapshot: models.ClusterSnapshot) -> None:
    answer = services.explain_victims(snapshot, "root.a")
    text = str(answer)
    assert "k7" in text  # the youngest allocation is a candidate
    with pytest.raises(services.ServiceError):
        services.explain_victims(snapshot, "root.nope")


@pytest.mark.django_db
def test_victim_reasons_are_in_human_units_and_utc_times() -> None:
    """The pages show cores, binary bytes and UTC times, never epoch seconds or millicores."""
    import factories

    doc = factories.small_scenario()
    doc["allocations"] = doc["allocations"][:2]  # root.a at its 2-core guarantee
    snap = factories.SnapshotFactory.create(scenario=doc)
    answer: Any = services.explain_victims(snap, "root.a")  # a JSON document
    floors = [r["text"] for e in answer["exclusions"] for r in e["reasons"]]
    assert floors
    assert all(
        "below its guarantee vcore 2 cores in vcore (usage vcore 2 cores)" in t for t in floors
    )
    full = factories.SnapshotFactory.create()  # eight allocations: all of them are candidates
    explained: Any = services.explain_victims(full, "root.a.y")  # a JSON document
    first = explained["candidates"][-1]
    # k0: created 1000 s before the snapshot's time (2026-09-01 10:00:00 UTC)
    assert first["key"] == "k0"
    assert "created at 2026-09-01 09:43:20 UTC, 16m 40s old" in " ".join(first["reasons"])


@pytest.mark.django_db
def test_cluster_from_a_snapshot_without_its_scenario_loaded() -> None:
    """The partition settings come from a JSON key lookup when the scenario is deferred."""
    import factories

    snap = factories.SnapshotFactory.create(scenario=factories.small_scenario(enabled=False))
    deferred = models.ClusterSnapshot.objects.defer("scenario").get(pk=snap.pk)
    assert "scenario" not in deferred.__dict__
    cluster = services.cluster_from_snapshot(deferred)
    assert cluster.partition.quota_preemption_enabled is False
    assert len(cluster.allocations) == 8
    assert [q.name for q in cluster.root.children] == ["a", "b"]
    assert cluster == services.cluster_from_snapshot(models.ClusterSnapshot.objects.get(pk=snap.pk))


@pytest.mark.django_db
def test_engine_state_is_built_once_per_snapshot(
    snapshot: models.ClusterSnapshot, django_assert_num_queries: Any
) -> None:
    """Pages and runs of one snapshot reuse its engine state: no rows are read again."""
    state = services.engine_state(snapshot)
    again = models.ClusterSnapshot.objects.get(pk=snapshot.pk)
    with django_assert_num_queries(0):
        assert services.engine_state(again) is state
        services.explain_victims(again, "root.a")
    with django_assert_num_queries(1):  # the values stored at import: one small row
        preemptable = services.queue_preemptable(again)
    assert preemptable["root.a"] == {"vcore": 6000}


@pytest.mark.django_db
def test_enforcement_view_of_a_cached_cluster_leaves_it_unchanged(
    snapshot: models.ClusterSnapshot,
) -> None:
    """Treating victims as preempted gives a new cluster; the cached one stays as stored."""
    state = services.engine_state(snapshot)
    key = state.cluster.allocations[0].key
    changed = services.cluster_from_snapshot(snapshot, preempted=[key])
    assert [a.preempted for a in changed.allocations if a.key == key] == [True]
    assert [a.preempted for a in state.cluster.allocations if a.key == key] == [False]
