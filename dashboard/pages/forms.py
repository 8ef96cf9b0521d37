"""Forms of the pages: filters, what-if asks, quota changes, imports.

Resource quantities are typed the way queues.yaml spells them (``6`` cores,
``500m``, ``24Gi``, ``1``) and parsed with the importers' quantity rules, so a
value means exactly what it would mean in a YuniKorn config.  Durations are Go
durations (``5m``, ``1h30m``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from django import forms

from dashboard import models, services
from dashboard.importers import quantities

_EXAMPLES = {"vcore": "e.g. 6 or 500m", "memory": "e.g. 24Gi"}


def _field_name(prefix: str, rtype: str) -> str:
    return f"{prefix}__{rtype}"


class _ResourceFields:
    """Mixin: one text field per resource type, read back as ``{type: int}``."""

    types: list[str]
    fields: dict[str, forms.Field]
    cleaned_data: dict[str, Any]

    def _add_resource_fields(self, prefix: str, label: str, required_one: bool) -> None:
        for t in self.types:
            self.fields[_field_name(prefix, t)] = forms.CharField(
                label=f"{label} {t}",
                required=False,
                max_length=40,
                widget=forms.TextInput(
                    attrs={"placeholder": _EXAMPLES.get(t, "e.g. 1"), "autocomplete": "off"}
                ),
            )
        self._required_one = required_one

    def _resource(self, prefix: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.types:
            text = str(self.cleaned_data.get(_field_name(prefix, t)) or "").strip()
            if not text:
                continue
            try:
                out[t] = quantities.parse_quantity(text, t)
            except quantities.QuantityError as exc:
                raise forms.ValidationError({_field_name(prefix, t): str(exc)}) from exc
        return out

    def resource_field_names(self, prefix: str) -> list[str]:
        return [_field_name(prefix, t) for t in self.types]


class AllocationFilter(forms.Form):
    q = forms.CharField(required=False, label="Search key, app or node")
    state = forms.ChoiceField(
        required=False,
        choices=[
            ("", "all"),
            ("running", "not preempted"),
            ("preempted", "preempted (terminating)"),
            ("opted_out", "opted out of preemption"),
        ],
    )


class HistoryFilter(forms.Form):
    queue = forms.CharField(required=False, label="Queue (and below)")
    outcome = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any"),
            ("preempted", "preempted"),
            ("fits", "fits"),
            ("not_possible", "not possible"),
            ("enforced", "target claimed in full"),
            ("best_effort", "target claimed in part"),
            ("does_not_help", "does not help"),
            ("not_needed", "not needed"),
        ],
    )
    nature = forms.ChoiceField(
        required=False, choices=[("", "any"), *models.PreemptionRun.Nature.choices]
    )
    kind = forms.ChoiceField(
        required=False, choices=[("", "any"), *models.PreemptionRun.Kind.choices]
    )
    trigger = forms.ChoiceField(
        required=False, choices=[("", "any"), *models.PreemptionRun.Trigger.choices]
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))


class PreemptForm(_ResourceFields, forms.Form):
    """A what-if for one ask: a pending ask of the snapshot, or one typed here."""

    ask_key = forms.ChoiceField(required=False, label="Pending ask")
    queue = forms.ChoiceField(required=False, label="Queue (leaf)")
    priority = forms.IntegerField(
        required=False, initial=0, min_value=-(2**31), max_value=2**31 - 1
    )
    allow_preempt_other = forms.BooleanField(
        required=False, initial=True, label="May preempt other tasks"
    )

    def __init__(
        self,
        *args: Any,
        asks: Sequence[models.PendingAsk],
        leaves: Sequence[str],
        types: Sequence[str],
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("auto_id", "ask_%s")  # the quota form on the same page has "queue" too
        super().__init__(*args, **kwargs)
        self.types = list(types)
        cast(forms.ChoiceField, self.fields["ask_key"]).choices = [
            ("", "— type an ask below —")
        ] + [(a.key, f"{a.key} · {a.queue}") for a in asks]
        cast(forms.ChoiceField, self.fields["queue"]).choices = [("", "—")] + [
            (p, p) for p in leaves
        ]
        self._add_resource_fields("res", "Resources", required_one=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("ask_key"):
            return data
        if not data.get("queue"):
            raise forms.ValidationError(
                "Choose a pending ask, or a queue and resources for a typed ask."
            )
        if not self._resource("res"):
            raise forms.ValidationError("A typed ask needs at least one resource quantity.")
        return data

    def run_request(self) -> dict[str, object]:
        """The request for ``services.create_run`` (kind whatif_preempt)."""
        data = self.cleaned_data
        if data.get("ask_key"):
            return {"ask_key": data["ask_key"]}
        return {
            "ask": {
                "key": "what-if",
                "queue": data["queue"],
                "resources": self._resource("res"),
                "priority": data.get("priority") or 0,
                "allow_preempt_other": bool(data.get("allow_preempt_other")),
            }
        }


class QuotaForm(_ResourceFields, forms.Form):
    """A what-if quota decrease: a queue and its lower max."""

    queue = forms.ChoiceField(label="Queue")

    def __init__(
        self, *args: Any, paths: Sequence[str], types: Sequence[str], **kwargs: Any
    ) -> None:
        kwargs.setdefault("auto_id", "quota_%s")
        super().__init__(*args, **kwargs)
        self.types = list(types)
        cast(forms.ChoiceField, self.fields["queue"]).choices = [(p, p) for p in paths]
        self._add_resource_fields("max", "New max", required_one=True)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self._resource("max"):
            raise forms.ValidationError("Give the new max in at least one resource type.")
        return data

    def run_request(self) -> dict[str, object]:
        return {"queue": self.cleaned_data["queue"], "new_max": self._resource("max")}


class ChangeForm(_ResourceFields, forms.Form):
    """Schedule (or edit) a quota change: new max per type and/or a new delay."""

    queue = forms.CharField(max_length=1000, widget=forms.HiddenInput, required=True)
    delay = forms.CharField(
        required=False,
        max_length=40,
        label="Quota preemption delay",
        help_text="A Go duration such as 5m or 1h30m; empty keeps the current delay.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 5m"}),
    )
    confirm = forms.BooleanField(
        required=False,
        label="I understand that saving resets the timer: it starts again now.",
    )

    def __init__(
        self, *args: Any, types: Sequence[str], confirm: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.types = list(types)
        self._needs_confirm = confirm
        self.fields["confirm"].required = confirm
        self._add_resource_fields("max", "New max", required_one=False)
        self.order_fields(["queue", *self.resource_field_names("max"), "delay", "confirm"])

    @classmethod
    def for_change(cls, change: models.QuotaChange, types: Sequence[str]) -> ChangeForm:
        """Pre-filled with a change's queue, max and delay (for editing)."""
        shown = list(dict.fromkeys([*types, *(change.new_max or {})]))
        initial: dict[str, object] = {"queue": change.queue_path}
        for t, q in (change.new_max or {}).items():
            initial[_field_name("max", t)] = quantities.format_quantity(int(q), t)
        initial["delay"] = quantities.go_duration_string(change.delay) if change.delay else ""
        return cls(initial=initial, types=shown, confirm=True)

    @classmethod
    def for_plan(cls, run: models.PreemptionRun, types: Sequence[str]) -> ChangeForm:
        """Pre-filled from a what-if quota run: its queue and new max."""
        request = run.request if isinstance(run.request, Mapping) else {}
        new_max = request.get("new_max") or {}
        shown = list(dict.fromkeys([*types, *new_max]))
        initial: dict[str, object] = {"queue": run.queue}
        for t, q in new_max.items():
            initial[_field_name("max", t)] = quantities.format_quantity(int(q), str(t))
        return cls(initial=initial, types=shown)

    def clean_delay(self) -> float | None:
        text = str(self.cleaned_data.get("delay") or "").strip()
        if not text:
            return None
        try:
            seconds = services.delay_seconds(text)
        except services.ServiceError as exc:
            raise forms.ValidationError(exc.message) from exc
        try:
            return services.checked_delay(seconds)
        except services.ServiceError as exc:
            raise forms.ValidationError(f"the delay {exc.message}") from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        new_max = self._resource("max")
        if not new_max and data.get("delay") is None:
            raise forms.ValidationError("Give a new max in some resource type, or a new delay.")
        data["new_max"] = new_max
        return data

    def change_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``services.schedule_quota_change`` (omitted = unchanged)."""
        out: dict[str, Any] = {}
        if self.cleaned_data.get("new_max"):
            out["new_max"] = self.cleaned_data["new_max"]
        if self.cleaned_data.get("delay") is not None:
            out["new_delay"] = self.cleaned_data["delay"]
        return out

    def error_text(self) -> str:
        """All errors of the form in one line (for a flash message)."""
        parts: list[str] = []
        for field, errors in self.errors.items():
            name = "" if field == "__all__" else f"{self.fields[field].label or field}: "
            parts.extend(f"{name}{e}" for e in errors)
        return "; ".join(parts)


class _MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class _MultipleFileField(forms.FileField):
    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class ImportForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[
            ("snapshot", "Cluster snapshot: scenario JSON, YuniKorn REST files or a state dump"),
            ("config", "Queue config: queues.yaml or the yunikorn-configs ConfigMap"),
        ],
        widget=forms.RadioSelect,
        initial="snapshot",
    )
    partition = forms.CharField(
        required=False,
        max_length=200,
        help_text="Optional: the partition to store it under (default: as the file says).",
    )
    upload = _MultipleFileField(
        widget=_MultipleFileInput(attrs={"multiple": True}),
        help_text="One file, or several YuniKorn REST responses taken together.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        files = data.get("upload") or []
        if data.get("kind") == "config" and len(files) != 1:
            raise forms.ValidationError("A queue config is one file.")
        return data
