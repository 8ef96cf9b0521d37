"""The migration tests' way back to the latest migrations leaves the database as
``migrate`` does, for the tests the same worker runs next."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from migration_support import _back_to_latest

from dashboard.sources.models import ClusterSource


def test_the_way_back_keeps_content_types_and_permissions(
    transactional_db: None, django_db_blocker: Any
) -> None:
    types = set(ContentType.objects.values_list("app_label", "model"))
    permissions = set(Permission.objects.values_list("content_type__model", "codename"))
    cached = ContentType.objects.get_for_model(ClusterSource)  # kept in memory
    assert types
    assert permissions

    _back_to_latest(django_db_blocker)  # empties every table on its way

    assert set(ContentType.objects.values_list("app_label", "model")) == types
    assert set(Permission.objects.values_list("content_type__model", "codename")) == permissions
    again = ContentType.objects.get_for_model(ClusterSource)
    assert ContentType.objects.filter(pk=again.pk).exists()
    assert (again.app_label, again.model) == (cached.app_label, cached.model)
