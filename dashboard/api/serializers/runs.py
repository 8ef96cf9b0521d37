"""Serializers of runs (what-if, predicted, observed) with their victims, and the
inputs of a what-if or a round."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard import display, models, services
from dashboard.access.redaction import hidden_victim, row_redactions, run_redaction
from dashboard.api.serializers.fields import ResourceField


class RunVictimSerializer(serializers.ModelSerializer[models.RunVictim]):
    """One victim; ``placeholder`` and ``task_group`` come from the run's snapshot."""

    resources = ResourceField()
    placeholder = serializers.SerializerMethodField(
        help_text="a gang-scheduling placeholder in the run's snapshot"
    )
    task_group = serializers.SerializerMethodField(help_text="its gang's task group, if any")
    pod = serializers.SerializerMethodField(
        help_text="its pod's name in the run's snapshot (empty when unknown)"
    )
    namespace = serializers.SerializerMethodField(help_text="its pod's namespace")
    user = serializers.SerializerMethodField(help_text="its application's user")

    class Meta:
        model = models.RunVictim
        fields = [
            "position",
            "allocation_key",
            "ask",
            "app",
            "queue",
            "leaf",
            "node",
            "resources",
            "placeholder",
            "task_group",
            "pod",
            "namespace",
            "user",
        ]

    def _name(self, obj: models.RunVictim) -> services.AllocationName:
        names = self.context.get("names")
        if not isinstance(names, Mapping):  # on its own: look up its run's snapshot
            names = services.allocation_names(obj.run.snapshot, [obj.allocation_key])
        found = names.get(obj.allocation_key)
        return found if isinstance(found, services.AllocationName) else services.AllocationName("")

    def get_pod(self, obj: models.RunVictim) -> str:
        return self._name(obj).pod_name

    def get_namespace(self, obj: models.RunVictim) -> str:
        return self._name(obj).namespace

    def get_user(self, obj: models.RunVictim) -> str:
        return self._name(obj).user

    def _gang(self, obj: models.RunVictim) -> Mapping[str, object]:
        gang = self.context.get("gang")
        if gang is None:  # a victim serialized on its own: look up its run's snapshot
            gang = services.gang_allocations(obj.run.snapshot, [obj.allocation_key])
        found = gang.get(obj.allocation_key) if isinstance(gang, Mapping) else None
        return found if isinstance(found, Mapping) else {}

    def get_placeholder(self, obj: models.RunVictim) -> bool:
        return self._gang(obj).get("placeholder") is True

    def get_task_group(self, obj: models.RunVictim) -> str:
        return str(self._gang(obj).get("task_group") or "")


class RunSerializer(serializers.ModelSerializer[models.PreemptionRun]):
    cluster = serializers.CharField(
        source="partition.cluster.name", read_only=True, allow_null=True, help_text="the cluster"
    )
    partition: serializers.SlugRelatedField[models.Partition] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    created_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    victim_count = serializers.SerializerMethodField()
    nature = serializers.ChoiceField(
        choices=models.PreemptionRun.Nature.choices,
        read_only=True,
        help_text="what-if (asked for), predicted (the dashboard's own timers: nothing "
        "happened in the cluster) or observed (the scheduler's own preemption)",
    )
    predicted: serializers.PrimaryKeyRelatedField[models.PreemptionRun] = (
        serializers.PrimaryKeyRelatedField(
            read_only=True,
            allow_null=True,
            help_text="observed runs: the dashboard's run that predicted this enforcement",
        )
    )
    outcome_text = serializers.SerializerMethodField(
        help_text="the outcome in words after the run's nature: a what-if's or a predicted "
        "run's 'enforced' is 'target claimed in full' (nothing happened in the cluster); "
        "``outcome`` keeps the engine's value"
    )

    class Meta:
        model = models.PreemptionRun
        fields = [
            "id",
            "cluster",
            "partition",
            "snapshot",
            "kind",
            "trigger",
            "nature",
            "predicted",
            "status",
            "queue",
            "outcome",
            "outcome_text",
            "claimed",
            "target",
            "alerts",
            "error",
            "attempts",
            "victim_count",
            "created_by",
            "queued_at",
            "started_at",
            "finished_at",
            "engine_ms",
        ]

    #: free text of a run that may name victims or queues a tenant cannot view
    REDACTED = ("alerts", "error", "target", "claimed")

    def to_representation(self, instance: models.PreemptionRun) -> dict[str, Any]:
        data = super().to_representation(instance)
        if type(self) is not RunSerializer or not (instance.alerts or instance.error):
            return data  # the detail redacts its own; a run without text names nothing
        rows = row_redactions(self.context)
        redaction = rows.run(instance) if rows is not None else None
        if redaction is not None:  # a tenant: as the run's detail shows them
            for name in self.REDACTED:
                data[name] = redaction.json(data.get(name))
        return data

    def get_outcome_text(self, obj: models.PreemptionRun) -> str:
        return display.outcome_with_nature(obj.get_nature_display(), obj.outcome or obj.status)

    def get_victim_count(self, obj: models.PreemptionRun) -> int:
        # lists annotate it (one query for the page, not one per run)
        annotated = getattr(obj, "victim_total", None)
        return int(annotated) if annotated is not None else obj.victims.count()


class RunComparisonSerializer(serializers.Serializer[Any]):
    """An observed run's victims against those its prediction chose (allocation keys)."""

    predicted = serializers.IntegerField(help_text="the predicting run")
    agreed = serializers.BooleanField(help_text="both chose exactly the same victims")
    both = serializers.ListField(child=serializers.CharField())
    only_predicted = serializers.ListField(child=serializers.CharField())
    only_observed = serializers.ListField(child=serializers.CharField())


class RunDetailSerializer(RunSerializer):
    victims = RunVictimSerializer(many=True, read_only=True)
    comparison = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "request",
            "result",
            "idempotency_key",
            "victims",
            "comparison",
        ]

    def to_representation(self, instance: models.PreemptionRun) -> dict[str, Any]:
        # one query for the gang facts of every victim (read by RunVictimSerializer)
        self.context["gang"] = services.gang_allocations(instance.snapshot)
        # and one for the pods and users of its victims
        self.context["names"] = services.allocation_names(
            instance.snapshot, instance.victims.values_list("allocation_key", flat=True)
        )
        data = super().to_representation(instance)
        request = self.context.get("request")
        redaction = run_redaction(request.user, instance) if request is not None else None
        if redaction is None:
            return data
        # a tenant: victims in queues it cannot view as their place and resources only
        data["victims"] = [
            hidden_victim(v["position"], v["resources"])
            if v["allocation_key"] in redaction.keys
            else v
            for v in data["victims"]
        ]
        for name in ("request", "result", "comparison", *self.REDACTED):
            data[name] = redaction.json(data.get(name))
        return data

    @extend_schema_field(RunComparisonSerializer(allow_null=True))
    def get_comparison(self, obj: models.PreemptionRun) -> dict[str, Any] | None:
        cmp = services.compare(obj) if obj.predicted_id else None
        if cmp is None:
            return None
        return {
            "predicted": cmp.predicted.pk,
            "agreed": cmp.agreed,
            "both": list(cmp.both),
            "only_predicted": list(cmp.only_predicted),
            "only_observed": list(cmp.only_observed),
        }


class _RunInput(serializers.Serializer[Any]):
    snapshot = serializers.PrimaryKeyRelatedField(queryset=models.ClusterSnapshot.objects.all())
    idempotency_key = serializers.CharField(required=False, max_length=200)
    wait = serializers.BooleanField(
        default=False, help_text="evaluate in this request instead of a worker"
    )


class WhatIfPreemptSerializer(_RunInput):
    ask_key = serializers.CharField(required=False, help_text="a pending ask of the snapshot")
    ask = serializers.JSONField(required=False, help_text="a typed ask (scenario format)")


class WhatIfQuotaSerializer(_RunInput):
    queue = serializers.CharField()
    new_max = ResourceField(allow_null=True)


class RoundInputSerializer(_RunInput):
    ask_keys = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="default: every pending ask"
    )
    max_preempted = ResourceField(required=False, allow_null=True)
