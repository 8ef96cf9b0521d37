"""Issue 40 item 7: the history timeline plots a predicted run at its firing time (the
change's deadline, as the history table shows), not when the worker computed it."""

from __future__ import annotations

from datetime import timedelta

import factories
import pytest

from dashboard import models
from dashboard.pages import data

T = factories.T0


@pytest.mark.django_db
def test_a_predicted_run_is_plotted_when_it_fired_not_when_it_was_computed() -> None:
    snap = factories.SnapshotFactory.create()
    common = {
        "partition": snap.partition,
        "snapshot": snap,
        "status": models.PreemptionRun.Status.DONE,
        "queue": "root.a",
        "outcome": "enforced",
        "queued_at": T,
        "started_at": T + timedelta(minutes=5),
    }
    predicted = models.PreemptionRun.objects.create(
        kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        trigger=models.PreemptionRun.Trigger.TIMER,
        **common,
    )
    what_if = models.PreemptionRun.objects.create(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        trigger=models.PreemptionRun.Trigger.MANUAL,
        **common,
    )
    rows = {r.id: r for r in data.run_rows([predicted, what_if])}
    assert rows[predicted.pk].nature == "predicted"
    assert rows[predicted.pk].started == T  # fired at the deadline, as the table says
    assert rows[what_if.pk].started == T + timedelta(minutes=5)  # computed when it started
