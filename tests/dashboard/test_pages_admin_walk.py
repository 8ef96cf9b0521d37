"""The pages' third pass (issue 28): an administrator's walk with two clusters, with
Django's test client where the defect is on the server."""

from __future__ import annotations

from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _partition(cluster: str) -> models.Partition:
    owner = models.Cluster.objects.create(name=cluster)
    return models.Partition.objects.create(cluster=owner, name="default")


# --------------------------------------------------------------------------- point 1


def test_acknowledge_all_on_a_filtered_feed_keeps_the_other_clusters_unread(staff: Any) -> None:
    """ "Acknowledge all" on the feed filtered to one cluster acknowledges that cluster's
    alerts only, and the feed's unread count is the filtered feed's."""
    west, east = _partition("lab-west"), _partition("acme-ml")
    for part, n in ((west, 2), (east, 3)):
        for i in range(n):
            alert = factories.make_alert(message=f"{part.cluster.name} alert {i}")
            alert.partition = part
            alert.save()
    client = _client(staff)
    html = client.get(reverse("alerts"), {"from_cluster": "lab-west"}).content.decode()
    assert '<span data-testid="alerts-unread-total">2</span> unread in lab-west' in html
    assert 'name="from_cluster" value="lab-west"' in html  # the button posts the filter
    client.post(reverse("alert_ack_all"), {"from_cluster": "lab-west", "kind": ""})
    unread = models.Alert.objects.filter(acknowledged_at__isnull=True)
    assert sorted(unread.values_list("partition__cluster__name", flat=True)) == ["acme-ml"] * 3
    everything = client.get(reverse("alerts")).content.decode()
    assert '<span data-testid="alerts-unread-total">3</span> unread.' in everything
