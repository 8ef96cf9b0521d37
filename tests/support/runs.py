"""Stored runs that more than one suite reads (the pages' tests and the browser's)."""

from __future__ import annotations

from scenarios import DEEP_VICTIM, T0, deep_victim_scenario

from dashboard import models, services


def deep_victim_run() -> models.PreemptionRun:
    """A finished what-if for an ask on root.b over :func:`scenarios.deep_victim_scenario`
    (stored as its snapshot), fenced at root, whose one victim, ``far``, sits five levels
    down (:data:`scenarios.DEEP_VICTIM`): below the three levels a big tree shows."""
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0,
        scenario=deep_victim_scenario(),
    )
    run = models.PreemptionRun.objects.create(
        partition=snapshot.partition,
        snapshot=snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        status=models.PreemptionRun.Status.DONE,
        queue="root.b",
        request={"ask": {"queue": "root.b", "resources": {"vcore": 1000}}},
        result={"fence": "root", "victims": ["far"]},
        outcome="preempted",
        queued_at=T0,
    )
    models.RunVictim.objects.create(
        run=run, position=0, allocation_key="far", app="app-far", queue=DEEP_VICTIM, node="n1"
    )
    return run
