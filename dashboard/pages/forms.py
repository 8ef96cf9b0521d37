"""Forms of the pages: filters, what-if asks, quota changes, imports.

Resource quantities are typed the way queues.yaml spells them (``6`` cores,
``500m``, ``24Gi``, ``1``) and parsed with the importers' quantity rules, so a
value means exactly what it would mean in a YuniKorn config.  Durations are Go
durations (``5m``, ``1h30m``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from django import forms

from dashboard import display, models, services
from dashboard.importers import quantities
from dashboard.pages.fast_select import FastSelect

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


#: A function giving the max in force of a queue (None = no max), for the max forms.
CurrentMax = Callable[[str], Mapping[str, int] | None]


def limit_input(rtype: str, quantity: int | None) -> str:
    """A max as the form field shows it ("" for no limit)."""
    return "" if quantity is None else quantities.format_quantity(int(quantity), rtype)


def ask_label(ask: models.PendingAsk) -> str:
    """A pending ask as the what-if list shows it: its queue first (a narrow window cuts
    the end), its pod, what it asks, its priority and application, then its key."""
    parts = [ask.queue]
    if ask.pod:
        parts.append(f"pod {ask.pod}")
    parts += [display.format_resource(ask.resources or {}), f"priority {ask.priority}"]
    if ask.app:
        parts.append(f"app {ask.app}")
    parts.append(display.short_key(ask.key) if ask.pod else ask.key)
    return " · ".join(parts)


#: The "in force" column of a max form before a queue is chosen (also in maxforms.js).
NO_QUEUE_YET = "pick a queue"


class _MaxFields(_ResourceFields):
    """Mixin: a whole new max per type, "unlimited" an explicit choice, removals confirmed.

    Every type gets a text field (pre-filled with the max in force) and an
    "unlimited" box; an empty field without the box ticked is an error, never a
    silent "unlimited".  A type limited now and unlimited in the new max is a
    removed limit: it needs ``confirm_remove``.
    """

    current_max: CurrentMax | None
    data: Any
    is_bound: bool

    def _add_max_fields(self, label: str) -> None:
        self._add_resource_fields("max", label, required_one=False)
        for t in self.types:
            self.fields[_field_name("unlimited", t)] = forms.BooleanField(
                required=False, label=f"{t} unlimited"
            )
        self.fields["confirm_remove"] = forms.BooleanField(
            required=False, label="Yes, remove these limits (the queue becomes unlimited there)"
        )

    def _initial_max(self, initial: dict[str, object], current: Mapping[str, int] | None) -> None:
        for t in self.types:
            q = (current or {}).get(t)
            initial[_field_name("max", t)] = limit_input(t, q)
            initial[_field_name("unlimited", t)] = q is None

    def max_rows(self) -> list[dict[str, Any]]:
        """Per type: the value field, the "unlimited" box (for the templates)."""
        form = cast(forms.Form, self)
        queue = str((self.data.get("queue") if self.is_bound else form.initial.get("queue")) or "")
        current = self.current_max(queue) if self.current_max and queue else None

        def in_force(t: str) -> str:
            if not queue:
                return NO_QUEUE_YET  # nothing is in force before a queue is chosen
            q = (current or {}).get(t)
            return "unlimited" if q is None else display.format_quantity(t, q)

        return [
            {
                "type": t,
                "value": form[_field_name("max", t)],
                "unlimited": form[_field_name("unlimited", t)],
                "in_force": in_force(t),
            }
            for t in self.types
        ]

    def _new_max(self) -> dict[str, int]:
        """The whole new max (types left out are unlimited), checked field by field."""
        out: dict[str, int] = {}
        errors: dict[str, str] = {}
        for t in self.types:
            name = _field_name("max", t)
            text = str(self.cleaned_data.get(name) or "").strip()
            unlimited = bool(self.cleaned_data.get(_field_name("unlimited", t)))
            if unlimited and text:
                errors[name] = f"{t}: give a max or choose unlimited, not both"
            elif not unlimited and not text:
                errors[name] = f'{t}: give a max, or tick "unlimited" to remove the limit'
            elif text:
                try:
                    out[t] = quantities.parse_quantity(text, t)
                except quantities.QuantityError as exc:
                    errors[name] = str(exc)
        if errors:
            raise forms.ValidationError(errors)
        return out

    def _check_removed(self, queue: str, new_max: Mapping[str, int]) -> list[str]:
        """Types whose limit the new max removes; an error unless confirmed."""
        current = self.current_max(queue) if self.current_max and queue else None
        removed = sorted(t for t in (current or {}) if t not in new_max)
        self.removed_limits = [
            f"{t} {display.format_quantity(t, (current or {})[t])}" for t in removed
        ]
        self.max_changes = max_changes(current, new_max or None)
        if removed and not self.cleaned_data.get("confirm_remove"):
            self.needs_remove_confirm = True
            raise forms.ValidationError(
                f"This removes the limit on {', '.join(self.removed_limits)}: "
                'tick "remove these limits" to confirm.'
            )
        return removed


def max_changes(
    old: Mapping[str, int] | None, new: Mapping[str, int] | None
) -> list[dict[str, str]]:
    """Per type, old -> new as text ("unlimited" for no limit), changed types only."""
    out: list[dict[str, str]] = []
    for t in sorted(set(old or {}) | set(new or {})):
        before = (old or {}).get(t)
        after = (new or {}).get(t)
        if before == after:
            continue
        out.append(
            {
                "type": t,
                "old": "unlimited" if before is None else display.format_quantity(t, before),
                "new": "unlimited" if after is None else display.format_quantity(t, after),
            }
        )
    return out


def max_changes_text(old: Mapping[str, int] | None, new: Mapping[str, int] | None) -> str:
    """``memory 64 GiB → unlimited, vcore 16 cores → 6 cores`` ("no change" if equal)."""
    rows = max_changes(old, new)
    return ", ".join(f"{r['type']} {r['old']} → {r['new']}" for r in rows) or "no change"


class AllocationFilter(forms.Form):
    q = forms.CharField(required=False, label="Search pod, key, app or node")
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

    ask_key = forms.ChoiceField(required=False, label="Pending ask", widget=FastSelect)
    queue = forms.ChoiceField(required=False, label="Queue (leaf)", widget=FastSelect)
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
        ] + [(a.key, ask_label(a)) for a in asks]
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


class QuotaForm(_MaxFields, forms.Form):
    """A what-if quota decrease: a queue and its whole new max (starting from the max in force)."""

    queue = forms.ChoiceField(label="Queue", widget=FastSelect)

    def __init__(
        self,
        *args: Any,
        paths: Sequence[str],
        types: Sequence[str],
        current_max: CurrentMax | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("auto_id", "quota_%s")
        self.current_max = current_max
        self.removed_limits: list[str] = []
        self.max_changes: list[dict[str, str]] = []
        self.needs_remove_confirm = False
        initial = dict(kwargs.pop("initial", None) or {})
        kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        self.types = list(types)
        cast(forms.ChoiceField, self.fields["queue"]).choices = [(p, p) for p in paths]
        self._add_max_fields("New max")
        if not any(k.startswith("max__") for k in initial):
            queue = str(initial.get("queue") or (paths[0] if paths else ""))
            self._initial_max(initial, current_max(queue) if current_max and queue else None)
            self.initial = initial

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        new_max = self._new_max()
        self._check_removed(str(data.get("queue") or ""), new_max)
        data["new_max"] = new_max
        return data

    def run_request(self) -> dict[str, object]:
        return {"queue": self.cleaned_data["queue"], "new_max": self.cleaned_data["new_max"]}


class ChangeForm(_MaxFields, forms.Form):
    """Schedule (or edit) a quota change: the whole new max per type and/or a new delay.

    The max fields start from the max in force; a max equal to it is "unchanged".
    """

    queue = forms.CharField(max_length=1000, widget=forms.HiddenInput, required=True)
    delay = forms.CharField(
        required=False,
        max_length=40,
        label="Quota preemption delay",
        help_text="A Go duration such as 5m or 1h30m; empty keeps the current delay.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 5m"}),
    )
    confirm = forms.BooleanField(required=False)

    #: What an edit's confirmation says, by the partition's timer rule set: under
    #: ``seed`` a further change restarts the timer; under ``scheduler`` it moves it.
    CONFIRM_LABELS = {
        "seed": "I understand that saving resets the timer: it starts again now.",
        "scheduler": "I understand that saving records a further change of this queue: "
        "the timer moves as described above, it does not start again.",
    }

    def __init__(
        self,
        *args: Any,
        types: Sequence[str],
        confirm: bool = False,
        current_max: CurrentMax | None = None,
        rules: str = "scheduler",
        **kwargs: Any,
    ) -> None:
        self.current_max = current_max
        self.removed_limits: list[str] = []
        self.max_changes: list[dict[str, str]] = []
        self.needs_remove_confirm = False
        super().__init__(*args, **kwargs)
        self.types = list(types)
        self._needs_confirm = confirm
        self.fields["confirm"].required = confirm
        self.fields["confirm"].label = self.CONFIRM_LABELS.get(
            rules, self.CONFIRM_LABELS["scheduler"]
        )
        self._add_max_fields("New max")
        self.order_fields(
            ["queue", *self.resource_field_names("max"), "delay", "confirm_remove", "confirm"]
        )

    @classmethod
    def for_change(
        cls, change: models.QuotaChange, types: Sequence[str], current_max: CurrentMax | None
    ) -> ChangeForm:
        """Pre-filled with a change's queue, max and delay (for editing)."""
        shown = list(dict.fromkeys([*types, *(change.new_max or {})]))
        initial: dict[str, object] = {"queue": change.queue_path}
        form = cls(
            initial=initial,
            types=shown,
            confirm=True,
            current_max=current_max,
            rules=change.partition.timer_rules,
        )
        form._initial_max(initial, change.new_max)
        initial["delay"] = quantities.go_duration_string(change.delay) if change.delay else ""
        return form

    @classmethod
    def for_queue(
        cls,
        queue: str,
        current: Mapping[str, int] | None,
        types: Sequence[str],
        current_max: CurrentMax | None = None,
    ) -> ChangeForm:
        """Pre-filled with a queue and the max in force there."""
        shown = list(dict.fromkeys([*types, *(current or {})]))
        initial: dict[str, object] = {"queue": queue}
        form = cls(initial=initial, types=shown, current_max=current_max)
        form._initial_max(initial, current)
        return form

    @classmethod
    def for_plan(
        cls, run: models.PreemptionRun, types: Sequence[str], current_max: CurrentMax | None
    ) -> ChangeForm:
        """Pre-filled from a what-if quota run: its queue and new max (as planned)."""
        request = run.request if isinstance(run.request, Mapping) else {}
        new_max = request.get("new_max") or {}
        shown = list(dict.fromkeys([*types, *new_max]))
        initial: dict[str, object] = {"queue": run.queue}
        form = cls(initial=initial, types=shown, current_max=current_max)
        form._initial_max(initial, {str(t): int(q) for t, q in new_max.items()})
        return form

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
        if self.errors:
            return data
        queue = str(data.get("queue") or "")
        new_max = self._new_max()
        self._check_removed(queue, new_max)
        current = self.current_max(queue) if self.current_max and queue else None
        unchanged = self.current_max is not None and dict(current or {}) == new_max
        if unchanged and data.get("delay") is None:
            raise forms.ValidationError(
                "Nothing changes: the max is the one in force and no new delay is given."
            )
        data["new_max"] = None if unchanged else (new_max or None)
        data["max_unchanged"] = unchanged
        return data

    def change_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``services.schedule_quota_change`` (omitted = unchanged)."""
        out: dict[str, Any] = {}
        if not self.cleaned_data.get("max_unchanged"):
            out["new_max"] = self.cleaned_data.get("new_max")
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
    cluster = forms.CharField(
        required=False,
        max_length=200,
        help_text="Optional: the cluster it belongs to, made when new (default: a snapshot's "
        "clusterId, else the only cluster).",
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
    captured_at = forms.DateTimeField(
        required=False,
        label="Captured at (UTC)",
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
        help_text="Optional, for REST answers (they carry no time): when they were fetched. "
        "Timers and history count from it; default now. A state dump carries its own.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        files = data.get("upload") or []
        if data.get("kind") == "config" and len(files) != 1:
            raise forms.ValidationError("A queue config is one file.")
        if data.get("kind") == "config" and data.get("captured_at") is not None:
            self.add_error("captured_at", "A capture time is for a cluster snapshot.")
        return data
