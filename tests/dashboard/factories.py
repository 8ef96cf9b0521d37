"""factory_boy factories for the dashboard models.

Snapshots are stored through ``services.store_snapshot`` so that their rows
(queues, nodes, allocations, asks) are exactly what an import writes.
"""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth import get_user_model
from scenarios import SMALL_ASKS
from scenarios import T0 as T0  # re-exported for the tests
from scenarios import small_scenario as small_scenario

from dashboard import models, services

# factory_boy imports its SQLAlchemy support whenever SQLAlchemy is installed (the
# product has it for the embedded broker): about half a second of each test process's
# CPU for a module these factories never use. A None entry makes that import fail,
# which factory_boy takes as SQLAlchemy missing.
sys.modules.setdefault("factory.alchemy", None)  # type: ignore[arg-type]
import factory  # noqa: E402


class UserFactory(factory.django.DjangoModelFactory[Any]):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True  # the hook below adds a permission, no field

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")
    is_staff = False

    @factory.post_generation  # type: ignore[untyped-decorator]  # factory_boy is untyped
    def every_queue(self, create: bool, extracted: bool | None, **kwargs: Any) -> None:
        """Reads every queue (the viewer role) unless ``every_queue=False``: a user
        without it is restricted by the queue ACLs (tests/dashboard/access)."""
        if create and extracted is not False:
            from support.readers import reads_every_queue

            reads_every_queue(self)


class ClusterFactory(factory.django.DjangoModelFactory[models.Cluster]):
    class Meta:
        model = models.Cluster
        django_get_or_create = ("name",)

    name = "default"


class PartitionFactory(factory.django.DjangoModelFactory[models.Partition]):
    class Meta:
        model = models.Partition
        django_get_or_create = ("cluster", "name")

    cluster = factory.SubFactory(ClusterFactory)
    name = "default"
    quota_preemption_enabled = True


class SnapshotFactory(factory.Factory[models.ClusterSnapshot]):
    """A stored snapshot of :func:`small_scenario` (through the service)."""

    class Meta:
        model = models.ClusterSnapshot

    partition_name = "default"
    scenario = factory.LazyFunction(small_scenario)
    asks = factory.LazyFunction(lambda: [dict(a) for a in SMALL_ASKS])
    captured_at = T0

    @classmethod
    def _create(cls, model_class: type, **kwargs: Any) -> models.ClusterSnapshot:
        return services.store_snapshot(
            partition_name=kwargs["partition_name"],
            source_kind=models.ClusterSnapshot.Source.SCENARIO,
            captured_at=kwargs["captured_at"],
            scenario=kwargs["scenario"],
            asks=kwargs["asks"],
            now=kwargs["captured_at"],
        )

    @classmethod
    def _build(cls, model_class: type, **kwargs: Any) -> models.ClusterSnapshot:
        return cls._create(model_class, **kwargs)


class PreemptionRunFactory(factory.django.DjangoModelFactory[models.PreemptionRun]):
    class Meta:
        model = models.PreemptionRun

    snapshot = factory.SubFactory(SnapshotFactory)
    partition = factory.LazyAttribute(lambda o: o.snapshot.partition)
    kind = models.PreemptionRun.Kind.WHATIF_PREEMPT
    trigger = models.PreemptionRun.Trigger.API
    status = models.PreemptionRun.Status.DONE
    queue = "root.b"
    request = factory.LazyFunction(lambda: {"ask_key": "ask-1"})
    outcome = "preempted"
    queued_at = T0


class AlertFactory(factory.django.DjangoModelFactory[models.Alert]):
    class Meta:
        model = models.Alert

    level = models.Alert.Level.WARNING
    kind = models.Alert.Kind.QUOTA
    message = factory.Sequence(lambda n: f"alert {n}")
    created_at = T0


def make_alert(message: str = "an alert") -> models.Alert:
    """An unacknowledged quota alert."""
    return models.Alert.objects.create(kind=models.Alert.Kind.QUOTA, message=message, created_at=T0)


def make_run(snapshot: models.ClusterSnapshot, **fields: Any) -> models.PreemptionRun:
    """A finished what-if run row (as the history shows it)."""
    values: dict[str, Any] = {
        "partition": snapshot.partition,
        "snapshot": snapshot,
        "kind": models.PreemptionRun.Kind.WHATIF_PREEMPT,
        "status": models.PreemptionRun.Status.DONE,
        "queue": "root.b",
        "request": {"ask_key": "ask-1"},
        "outcome": "preempted",
        "queued_at": T0,
    }
    values.update(fields)
    return models.PreemptionRun.objects.create(**values)
