"""Issue 40, item 5: cancelling an edited change leaves no hidden planned max.

Schedule root.a 9 -> 7 cores, edit it to 6 (a second change supersedes the first),
cancel the second: no change waits, so neither the max in force nor the planned max
is 7, usage 8 runs with no timer, and scheduling 9 -> 7 again is a change.
"""

from __future__ import annotations

import pytest
from quota_snapshots import at, scenario, store

from dashboard import models, services
from dashboard.services.quota.queue_settings import settings_for_paths

State = models.QuotaChange.State


@pytest.mark.django_db
def test_cancelling_an_edited_change_leaves_the_config_max() -> None:
    store(scenario(8), 0)
    partition = models.Partition.objects.get(name="default")
    first = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 7000}, now=at(5))
    assert first.state == State.WAITING
    edited = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 6000}, now=at(10)
    )
    first.refresh_from_db()
    assert first.state == State.RESET
    services.cancel_quota_change(edited, now=at(15))
    assert not models.QuotaChange.objects.filter(state__in=models.QuotaChange.ACTIVE_STATES)

    planned = services.queue_settings(partition, "root.a", planned=True)
    assert planned.max == {"vcore": 9000}, planned
    assert settings_for_paths(partition, ["root.a"], planned=True)["root.a"].max == {"vcore": 9000}
    assert services.queue_settings(partition, "root.a").max == {"vcore": 9000}
    again = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 7000}, now=at(20))
    assert (again.old_max, again.state) == ({"vcore": 9000}, State.WAITING)
