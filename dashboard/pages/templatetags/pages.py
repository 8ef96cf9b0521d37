"""Template helpers of the pages: human units and links that keep the scope.

``{% load pages %}`` gives the filters ``quantity``, ``resource``, ``seconds``,
``state_label``, ``humanize``, ``lookup`` and ``user_of`` and the tags
``{% scoped_url "name" key=value %}`` and ``{% allocation names key %}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from dashboard import display, models

register = template.Library()


@register.filter
def quantity(value: int | None, rtype: str) -> str:
    """``{{ 2500|quantity:"vcore" }}`` -> ``2.5 cores``; ``None`` -> ``not defined``."""
    return display.format_quantity(rtype, value)


@register.filter
def resource(value: Mapping[str, int] | None, empty: str = "not defined") -> str:
    """Every type of a resource in human units (``None`` says *empty*)."""
    return display.format_resource(value, empty=empty)


@register.filter
def seconds(value: float | None) -> str:
    """A duration in seconds as ``1h 5m``, ``5m``, ``30s``; ``None`` -> ``—``."""
    return display.format_duration(value)


@register.filter
def humanize(value: object) -> str:
    """A stored message (alert, reason) with resources and times in the pages' units."""
    return display.humanize_text(str(value))


@register.filter
def state_label(value: str) -> str:
    """A snake_case state as words: ``cancelled_by_increase`` -> ``cancelled by increase``;
    a quota change's ``fired``, ``reset`` and ``cleared`` read as the model labels them
    (awaiting the scheduler: a prediction, nothing done; superseded by a later change, which
    under the scheduler's rules keeps or moves the timer rather than restarting it; cleared
    at the scheduler's check, usage within the max)."""
    label = _CHANGE_LABELS.get(str(value))
    if label is not None:
        return label
    return str(value).replace("_", " ")


#: The quota change states whose model label says more than their name, lower-cased.
_CHANGE_LABELS = {
    str(state): state.label[0].lower() + state.label[1:]
    for state in (
        models.QuotaChange.State.FIRED,
        models.QuotaChange.State.RESET,
        models.QuotaChange.State.CLEARED,
    )
}


@register.filter
def run_outcome(value: str) -> str:
    """A run's outcome in words (see :data:`dashboard.display.OUTCOME_WORDS`)."""
    return display.outcome_words(str(value))


@register.simple_tag(takes_context=True)
def scoped_url(context: template.Context, name: str, **params: object) -> str:
    """``reverse(name)`` plus the scope in view and *params* as the query string."""
    scope = context.get("scope")
    url = reverse(name)
    query = scope.query(**params) if scope is not None else ""
    return f"{url}?{query}" if query else url


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **params: object) -> str:
    """The current query string with *params* set (``None`` or ``""`` removes a key)."""
    query = context["request"].GET.copy()
    for key, value in params.items():
        if value is None or value == "":
            query.pop(key, None)
        else:
            query[key] = str(value)
    encoded = str(query.urlencode())
    return f"?{encoded}" if encoded else "?"


@register.simple_tag(takes_context=True)
def sort_query(
    context: template.Context, key: str, param: str = "sort", dir_param: str = "dir"
) -> str:
    """Query string sorting by *key*; a second click on the same key reverses the order."""
    query = context["request"].GET.copy()
    is_current = query.get(param) == key
    descending = query.get(dir_param) == "desc"
    query[param] = key
    if is_current and not descending:
        query[dir_param] = "desc"
    else:
        query.pop(dir_param, None)
    query.pop("page", None)
    return "?" + str(query.urlencode())


@register.filter
def epoch(value: float | None) -> str:
    """Seconds since the epoch as ``2026-09-01 09:13:20`` (UTC); ``None`` or 0 -> ``—``."""
    if not value:
        return "—"
    return datetime.fromtimestamp(float(value), tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


@register.filter
def without(values: list[object] | None, value: object) -> list[object]:
    """*values* without the entries equal to *value* (e.g. alerts that repeat the reason)."""
    return [v for v in values or [] if v != value]


@register.filter
def lookup(mapping: Mapping[str, object] | None, key: str) -> object:
    """``mapping[key]``, or ``""`` when the mapping or the key is missing."""
    return (mapping or {}).get(key, "")


@register.simple_tag
def allocation(names: Mapping[str, object] | None, key: str) -> SafeString:
    """An allocation named for people (:func:`allocation_name`) from *names*,
    :func:`dashboard.services.allocation_names`' answer."""
    return allocation_name(key, str(getattr((names or {}).get(key), "pod", "") or ""))


@register.simple_tag
def allocation_name(key: str, pod: str = "") -> SafeString:
    """An allocation named for people: its pod (``namespace/name``) first, then its key
    shortened (the whole key in its title); the key alone when its pod is unknown."""
    if not pod:
        return format_html('<span class="mono alloc-key">{}</span>', key)
    return format_html(
        '<span class="alloc-pod">{}</span> <span class="mono muted alloc-key" title="{}">{}</span>',
        pod,
        key,
        display.short_key(key),
    )


@register.filter
def user_of(names: Mapping[str, object] | None, key: str) -> str:
    """The user of the application of allocation *key* (empty when unknown)."""
    return str(getattr((names or {}).get(key), "user", "") or "")


@register.simple_tag
def max_change(old: Mapping[str, int] | None, new: Mapping[str, int] | None) -> SafeString:
    """A max change with the types that change marked (``old → new``), the others said
    once as unchanged: ``vcore 8 cores → 4 cores; unchanged: memory 48 GiB``."""
    if old is None or new is None:
        return format_html(
            "{} → <strong>{}</strong>",
            display.format_resource(old),
            display.format_resource(new),
        )
    types = sorted(set(old) | set(new))
    changed = [t for t in types if old.get(t) != new.get(t)]
    kept = [t for t in types if t not in changed]

    def amount(res: Mapping[str, int], t: str) -> str:
        return display.format_quantity(t, res[t]) if t in res else "not defined"

    marked = format_html_join(
        "; ",
        '<span class="changed" data-type="{}">{} {} → <strong>{}</strong></span>',
        ((t, t, amount(old, t), amount(new, t)) for t in changed),
    )
    if not kept:
        return marked if changed else format_html('<span class="muted">no change</span>')
    same = ", ".join(f"{t} {amount(new, t)}" for t in kept)
    if not changed:
        return format_html('<span class="muted">unchanged: {}</span>', same)
    return format_html('{}<div class="muted">unchanged: {}</div>', marked, same)
