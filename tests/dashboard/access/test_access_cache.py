"""A user's permissions come from the config version in force, never from another
version that once had the same id (a restore, or a sequence reset, reuses ids)."""

from __future__ import annotations

import pytest
from support.tenants import CONFIG, CONFIG_BOB_ADMINISTERS_A, make_tenants

from dashboard import models, services
from dashboard.access.grants import access_for
from dashboard.services.scope.latest import latest_config

pytestmark = pytest.mark.django_db


def test_a_version_reusing_an_id_is_read_afresh() -> None:
    tenants = make_tenants()
    partition = tenants.snapshot.partition
    first = latest_config(partition)
    assert first is not None
    assert not access_for(tenants.bob, partition).may_administer("root.a")

    # The same id now names a version with other ACLs, as after a restore: the row
    # keeps its id and takes another import's text, parsed document and checksum.
    services.import_config(CONFIG_BOB_ADMINISTERS_A.encode(), filename="queues.yaml")
    second = latest_config(partition)
    assert second is not None
    assert second.pk != first.pk
    assert second.text != CONFIG
    models.ConfigVersion.objects.filter(pk=second.pk).update(planned=True)
    models.ConfigVersion.objects.filter(pk=first.pk).update(
        text=second.text, parsed=second.parsed, checksum=second.checksum
    )
    in_force = latest_config(partition)
    assert in_force is not None
    assert in_force.pk == first.pk

    assert access_for(tenants.bob, partition).may_administer("root.a")
