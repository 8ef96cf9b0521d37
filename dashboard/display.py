"""Units and text for people: one formatter for resources, durations and instants.

Pages, the API, charts, alerts and the services' texts all show resources
through these functions: vcore in cores, byte types (memory, storage,
hugepages) in binary bytes, anything else as a count; "not defined" is not 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from dashboard.importers.quantities import is_byte_type

Resource = Mapping[str, int]

GIB = 1 << 30
MILLI = 1000


def unit_of(rtype: str) -> tuple[str, int]:
    """The display unit and its size in internal units for a resource type.

    >>> unit_of("vcore"), unit_of("memory"), unit_of("pods")
    (('cores', 1000), ('GiB', 1073741824), ('', 1))
    """
    if rtype == "vcore":
        return "cores", MILLI
    if is_byte_type(rtype):
        return "GiB", GIB
    return "", 1


def in_units(rtype: str, quantity: int) -> float:
    """*quantity* in the display unit of *rtype* (cores, GiB, count)."""
    return quantity / unit_of(rtype)[1]


def _trim(value: float, places: int) -> str:
    text = f"{value:,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_quantity(rtype: str, quantity: int | None) -> str:
    """A quantity in human units, exact: cores for vcore, binary bytes for memory.

    ``None`` is "not defined".  When a byte value is not a round number in the
    chosen unit, the exact byte count follows in brackets.

    >>> format_quantity("vcore", 2500), format_quantity("vcore", 1)
    ('2.5 cores', '0.001 cores')
    >>> format_quantity("memory", 8 * 2**30), format_quantity("memory", 1536 * 2**20)
    ('8 GiB', '1.5 GiB')
    >>> format_quantity("memory", 1000)
    '1,000 B'
    >>> format_quantity("memory", 10**9)
    '953.674 MiB (1,000,000,000 B)'
    >>> format_quantity("nvidia.com/gpu", 0), format_quantity("pods", None)
    ('0', 'not defined')
    """
    if quantity is None:
        return "not defined"
    if rtype == "vcore":
        cores = quantity / MILLI
        return f"{_trim(cores, 3)} {'core' if quantity == MILLI else 'cores'}"
    if is_byte_type(rtype):
        sign = "-" if quantity < 0 else ""
        size = abs(quantity)
        for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if size >= scale:
                shown = f"{sign}{_trim(size / scale, 3)} {unit}"
                if (size * 1000) % scale != 0:  # not exact in 3 decimals: add the bytes
                    shown += f" ({quantity:,} B)"
                return shown
        return f"{quantity:,} B"
    return f"{quantity:,}"


def unit_label(rtype: str) -> str:
    """The unit a table column of *rtype* is in (the pages' unit), ``""`` for a count.

    >>> unit_label("vcore"), unit_label("memory"), unit_label("pods")
    ('cores', 'GiB', '')
    """
    return unit_of(rtype)[0]


def plain_quantity(rtype: str, quantity: int) -> str:
    """*quantity* as a bare number in the unit of :func:`unit_label` (for CSV cells: no
    thousands separators; as many decimals as one internal unit needs).

    >>> plain_quantity("vcore", 2500), plain_quantity("memory", 3 * 2**29)
    ('2.5', '1.5')
    >>> plain_quantity("vcore", 1), plain_quantity("pods", 7)
    ('0.001', '7')
    """
    scale = unit_of(rtype)[1]
    whole, rest = divmod(quantity, scale)
    if not rest:
        return str(whole)
    places = len(str(scale))  # enough digits for one internal unit
    return f"{quantity / scale:.{places}f}".rstrip("0").rstrip(".")


HOUR = 3600


def work_unit(rtype: str) -> tuple[str, int]:
    """The display unit of *rtype* over time (the scheduler's resource history is quantity times
    seconds) and its size in those internal units.

    >>> work_unit("vcore"), work_unit("memory")[0], work_unit("nvidia.com/gpu")
    (('core-hours', 3600000), 'GiB-hours', ('hours', 3600))
    """
    unit, scale = unit_of(rtype)
    unit = "core" if unit == "cores" else unit
    return (f"{unit}-hours" if unit else "hours"), scale * HOUR


def plain_work(rtype: str, quantity_seconds: int) -> str:
    """*quantity_seconds* as a bare number of :func:`work_unit` (a CSV cell), to 6 places.

    >>> plain_work("vcore", 7_200_000), plain_work("memory", 2**30 * 1800)
    ('2', '0.5')
    """
    value = quantity_seconds / work_unit(rtype)[1]
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def format_work(rtype: str, quantity_seconds: int) -> str:
    """*quantity_seconds* for people, in :func:`work_unit` to 3 places.

    >>> format_work("vcore", 5_400_000), format_work("nvidia.com/gpu", 36)
    ('1.5 core-hours', '0.01 hours')
    """
    unit, scale = work_unit(rtype)
    return f"{_trim(quantity_seconds / scale, 3)} {unit}"


def format_resource(
    resource: Resource | None, *, empty: str = "not defined", internal: bool = False
) -> str:
    """Every type of *resource* in human units; ``None`` says *empty*.

    With *internal*, quantities stay in the scheduler's own units (millicores,
    bytes), as alert texts quote them next to the engine's.

    >>> format_resource({"vcore": 2000, "memory": 2**30})
    'memory 1 GiB, vcore 2 cores'
    >>> format_resource(None), format_resource({})
    ('not defined', 'nothing')
    >>> format_resource({"vcore": 2000, "memory": 1024}, internal=True)
    'memory 1024, vcore 2000'
    """
    if resource is None:
        return empty
    if not resource:
        return "nothing"
    if internal:
        return ", ".join(f"{t} {q}" for t, q in sorted(resource.items()))
    return ", ".join(f"{t} {format_quantity(t, q)}" for t, q in sorted(resource.items()))


def short_key(key: str) -> str:
    """An allocation key shortened for reading beside its pod's name (a uid's first part).

    >>> short_key("9d76a48e-1c2f-4b3a-8e9d-0123456789ab"), short_key("alloc-1")
    ('9d76a48e…', 'alloc-1')
    """
    return f"{key[:8]}…" if len(key) > 12 else key


def allocation_label(key: str, pod: str = "") -> str:
    """An allocation as people name it: its pod (``namespace/name``) first, the key second.

    >>> allocation_label("9d76a48e-1c2f-4b3a-8e9d-0123456789ab", "batch/etl-7")
    'batch/etl-7 (9d76a48e…)'
    >>> allocation_label("alloc-1")
    'alloc-1'
    """
    return f"{pod} ({short_key(key)})" if pod else key


def format_duration(seconds: float | None) -> str:
    """A length of time as ``2d 3h``, ``1h 5m``, ``5m 30s``, ``30s``; ``None`` -> ``—``.

    >>> format_duration(3900), format_duration(0.4), format_duration(2 * 86400 + 3 * 3600 + 59)
    ('1h 5m', '0s', '2d 3h 59s')
    """
    if seconds is None:
        return "—"
    total = round(float(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{days}d" if days else "",
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return " ".join(p for p in parts if p) or "0s"


def format_instant(epoch: float) -> str:
    """An epoch time in UTC to the second, as the pages show times.

    >>> format_instant(1788256800.0)
    '2026-09-01 10:00:00 UTC'
    """
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def format_datetime(moment: datetime | None, *, empty: str = "—") -> str:
    """An aware datetime in UTC to the second (no microseconds), as the pages show times.

    >>> format_datetime(datetime(2026, 9, 1, 10, 0, 5, 123456, tzinfo=UTC))
    '2026-09-01 10:00:05 UTC'
    >>> format_datetime(None)
    '—'
    """
    if moment is None:
        return empty
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_ISO_INSTANT = re.compile(
    r"\b(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.\d+)?(?:\+00:00|Z)(?![\w:])"
)
_ENGINE_RESOURCE = re.compile(r"\{((?:[A-Za-z0-9./_-]+: -?\d+)(?:, [A-Za-z0-9./_-]+: -?\d+)*)\}")
_RAW_RESOURCE = re.compile(
    r"(?<![\w.])((?:[A-Za-z][A-Za-z0-9./_-]* -?\d+)(?:, [A-Za-z][A-Za-z0-9./_-]* -?\d+)*)"
    r"(?![\w.]| (?:B|KiB|MiB|GiB|TiB|cores?)\b)"
)
_RAW_TYPES = ("vcore", "memory")


def _engine_resource(match: re.Match[str]) -> str:
    resource: dict[str, int] = {}
    for part in match.group(1).split(", "):
        name, _, value = part.rpartition(": ")
        resource[name] = int(value)
    return format_resource(resource)


def _raw_resource(match: re.Match[str]) -> str:
    resource: dict[str, int] = {}
    for part in match.group(1).split(", "):
        name, _, value = part.rpartition(" ")
        resource[name] = int(value)
    if not any(t in _RAW_TYPES or is_byte_type(t) for t in resource):
        return match.group(0)  # "change 12", "snapshot 3": not a resource
    return format_resource(resource)


def humanize_text(text: str) -> str:
    """A stored message (alert, change reason, engine alert) in the pages' units.

    Older rows and the engine's own alert texts quote resources in internal
    units (``{memory: 1073741824, vcore: 2000}`` or ``memory 1073741824, vcore
    2000``) and instants as ISO text with microseconds; this rewrites both the
    way :func:`format_resource` and :func:`format_datetime` show them.

    >>> humanize_text("target {memory: 1073741824, vcore: 2500} was not claimed")
    'target memory 1 GiB, vcore 2.5 cores was not claimed'
    >>> humanize_text("usage memory 2147483648, vcore 44000 rose above the max")
    'usage memory 2 GiB, vcore 44 cores rose above the max'
    >>> humanize_text("memory 1 GiB, nvidia.com/gpu 1, vcore 16 cores")  # already human
    'memory 1 GiB, nvidia.com/gpu 1, vcore 16 cores'
    >>> humanize_text("fires at 2026-09-01T10:00:05.123456+00:00 (change 12)")
    'fires at 2026-09-01 10:00:05 UTC (change 12)'
    """
    text = _ISO_INSTANT.sub(lambda m: f"{m.group(1)} {m.group(2)} UTC", text)
    text = _RAW_RESOURCE.sub(_raw_resource, text)
    return _ENGINE_RESOURCE.sub(_engine_resource, text)


NATURE_HELP = {
    "what_if": "A what-if: the engine's answer to a question asked in the dashboard; "
    "nothing happened in the cluster.",
    "predicted": "Predicted: the dashboard's own quota timer computed what the scheduler "
    "would preempt; nothing happened in the cluster because of it.",
    "observed": "Observed: a preemption the scheduler itself carried out, read from its events.",
}
"""What each run nature means, for the run and history pages."""

IN_FORCE_WORDS = {
    "config": "the cluster's config in force",
    "snapshot": "as the latest snapshot reports it (a queue the config does not name)",
    "change": "a change applied in the cluster since the config",
    "observed": "observed: the scheduler's own max change or quota preemption",
}
"""Where a queue's max in force comes from, in words (``QueueSettings.source``)."""

OUTCOME_WORDS = {
    "enforced": "target claimed in full",
    "best_effort": "target claimed in part",
    "does_not_help": "would not help",
    "not_needed": "not needed",
    "not_possible": "not possible",
}
"""A run's outcome (the engine's status value) in words that claim nothing happened in a
cluster: a what-if's or a predicted run's "enforced" only says its target can be claimed."""


def outcome_with_nature(nature: str, outcome: str) -> str:
    """A run's outcome in words after its nature (what-if, predicted or observed), so that
    nothing the dashboard computed reads as something that happened in a cluster.

    >>> outcome_with_nature("predicted", "enforced"), outcome_with_nature("observed", "preempted")
    ('predicted: target claimed in full', 'observed: preempted')
    """
    words = outcome_words(outcome)
    return f"{nature}: {words}" if nature else words


def outcome_words(outcome: str) -> str:
    """A run outcome in words.

    >>> outcome_words("enforced"), outcome_words("preempted")
    ('target claimed in full', 'preempted')
    """
    return OUTCOME_WORDS.get(outcome, outcome.replace("_", " "))


_DEADLINE_WORDS = {
    "started": "started by the change at {at}",
    "usage_rose": "started when usage rose above the max at {at}",
    "kept": "kept from the first decrease at {since}",
    "shifted": "shifted by the delay change at {at}",
    "kept_across_raise": "kept across the raise at {at}",
    "rearmed": "re-armed at the scheduler's restart at {at}",
    "reset": "reset from the change at {at}",
    "rewait": "restarted when the running preemption completed at {at}",
}


def deadline_reason_words(reason: Mapping[str, object] | None, rules: str = "") -> str:
    """Which rule set a quota preemption deadline, for a page ("kept from the first decrease
    at ..."); empty when no reason is stored. *reason* is ``DeadlineReason.to_dict()``.

    >>> deadline_reason_words({"rule": "kept_across_raise", "at": 0, "since": None}, "scheduler")
    'kept across the raise at 1970-01-01 00:00:00 UTC (rule set scheduler)'
    """
    if not reason:
        return ""
    words = _DEADLINE_WORDS.get(str(reason.get("rule")))
    at = reason.get("at")
    if words is None or isinstance(at, bool) or not isinstance(at, int | float):
        return ""
    since = reason.get("since")
    if isinstance(since, bool) or not isinstance(since, int | float):
        since = at
    text = words.format(
        at=format_datetime(datetime.fromtimestamp(at, tz=UTC)),
        since=format_datetime(datetime.fromtimestamp(since, tz=UTC)),
    )
    return f"{text} (rule set {rules})" if rules else text
