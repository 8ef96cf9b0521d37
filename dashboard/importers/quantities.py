"""YuniKorn quantities: parsing exactly as the scheduler does, and config spellings back.

Quantities (yunikorn-core ``pkg/common/resources/quantity.go`` and
``NewResourceFromConf``): an integer with an optional suffix ``k M G T P E``
(powers of 10) or ``Ki Mi Gi Ti Pi Ei`` (powers of 2); whitespace anywhere is
ignored; ``vcore`` is given in cores and stored in millicores, and only
``vcore`` may use ``m`` (millicores); decimals, unknown suffixes, negative
values and anything beyond int64 are refused.  No library implements this
variant (Kubernetes' ``resource.Quantity`` accepts decimals and ``m``
everywhere), so it lives here.

Durations (``quota.preemption.delay``, ``preemption.delay``) are read by the
engine's one Go parser (``engine.durations``); this module only writes them
back (``go_duration_string``, ``short_duration``).

>>> parse_quantity("4000m", "vcore"), parse_quantity("8G", "memory"), parse_quantity("2", "vcore")
(4000, 8000000000, 2000)
>>> format_quantity(68719476736, "memory"), format_quantity(500, "vcore")
('64Gi', '500m')
>>> go_duration_string(300.0), short_duration(7200)
('5m0s', '2h')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from dashboard.names import name_problem

INT64_MAX = 2**63 - 1
VCORE = "vcore"

DECIMAL_SUFFIXES: dict[str, int] = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_MULTIPLIERS: dict[str, int] = {"": 1, "m": 1, **DECIMAL_SUFFIXES, **BINARY_SUFFIXES}

# Go's regexp \s is ASCII whitespace without \v; [0-9] and [A-Za-z] are ASCII only.
_WHITESPACE = re.compile(r"[\t\n\f\r ]+")
_LEGAL = re.compile(r"([+-]?[0-9]+)([A-Za-z]*)")
_DECIMAL = re.compile(r"([+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+))([A-Za-z]*)")

# Resource types measured in bytes: formatted with binary suffixes when exact.
_BYTE_TYPES = ("memory", "storage")  # and every "...-memory", "...-storage"

# Kubernetes resource names: an optional DNS-subdomain prefix and a name part.
_RESOURCE_TYPE = re.compile(
    r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


class QuantityError(ValueError):
    """A quantity the scheduler would refuse; the message says why."""


def check_resource_type(name: str) -> None:
    """Refuse an empty or malformed resource type name.

    YuniKorn itself accepts any map key, but a type that is not a Kubernetes
    resource name (``memory``, ``nvidia.com/gpu``, ``hugepages-2Mi``) can never
    match what a node offers, and such names end up in pages and charts.

    >>> check_resource_type("nvidia.com/gpu")  # fine: returns None
    """
    if not name:
        raise QuantityError("empty resource type name")
    problem = name_problem("resource type", name)
    if problem is not None:  # e.g. longer than its column: the length is named
        raise QuantityError(f"malformed resource type name: resource type name {problem}")
    if _RESOURCE_TYPE.fullmatch(name) is None:
        raise QuantityError(
            f"malformed resource type name {name!r} (expected a Kubernetes resource name such "
            "as vcore, memory, pods or nvidia.com/gpu)"
        )


def parse_quantity(text: str, resource_type: str) -> int:
    """The scheduler's int64 value of a config quantity.

    ``vcore`` is returned in millicores, every other type as the plain number
    (``memory`` in bytes).

    >>> parse_quantity(" 25k ", "pods"), parse_quantity("1Gi", "memory")
    (25000, 1073741824)

    "1.5Gi" raises QuantityError ("decimals are not allowed ...; write 1536Mi").
    """
    is_vcore = resource_type == VCORE
    value = _WHITESPACE.sub("", text)
    m = _LEGAL.fullmatch(value)
    if m is None:
        raise QuantityError(_syntax_message(text, value, resource_type))
    digits = m.group(1).lstrip("+-").lstrip("0")
    # int64 has 19 digits; a longer number is refused before int() (which caps at 4300)
    number, suffix = (INT64_MAX + 1 if len(digits) > 19 else int(m.group(1))), m.group(2)
    if number > INT64_MAX or number < -INT64_MAX - 1:
        raise QuantityError(
            f"invalid quantity {text!r} for {resource_type}: overflow (beyond int64)"
        )
    if suffix not in _MULTIPLIERS:
        raise QuantityError(
            f"invalid quantity {text!r} for {resource_type}: unknown suffix {suffix!r}"
            + _suffix_hint(suffix)
        )
    if suffix == "m" and not is_vcore:
        raise QuantityError(
            f"invalid quantity {text!r} for {resource_type}: the m (milli) suffix is only "
            "allowed for vcore"
        )
    result = number * _MULTIPLIERS[suffix]
    if is_vcore and suffix != "m":
        result *= 1000
    if result > INT64_MAX or result < -INT64_MAX - 1:
        raise QuantityError(
            f"invalid quantity {text!r} for {resource_type}: overflow (beyond int64"
            + (", vcore counts millicores)" if is_vcore else ")")
        )
    if result < 0:
        raise QuantityError(
            f"invalid quantity {text!r} for {resource_type}: negative resources are not permitted"
        )
    return result


def _suffix_hint(suffix: str) -> str:
    if suffix == "K":
        return " (suffixes are case-sensitive: use k for 1000 or Ki for 1024)"
    if suffix in ("Kb", "KB", "MB", "GB", "TB", "kb", "mb", "gb"):
        return " (use k M G T P E or Ki Mi Gi Ti Pi Ei, without B)"
    return " (use k M G T P E or Ki Mi Gi Ti Pi Ei)"


def _syntax_message(text: str, stripped: str, resource_type: str) -> str:
    base = f"invalid quantity {text!r} for {resource_type}"
    d = _DECIMAL.fullmatch(stripped)
    if d is None:
        return f"{base}: expected an integer with an optional suffix such as 8, 500m or 16Gi"
    hint = _integer_equivalent(d.group(1), d.group(2), resource_type)
    msg = f"{base}: decimals are not allowed (the scheduler reads whole numbers only)"
    return f"{msg}; write {hint}" if hint else msg


def _integer_equivalent(number: str, suffix: str, resource_type: str) -> str | None:
    """An exact integer spelling of a decimal quantity, if one exists (``1.5Gi`` -> ``1536Mi``)."""
    mult = _MULTIPLIERS.get(suffix)
    if mult is None or (suffix == "m" and resource_type != VCORE):
        return None
    try:
        exact = Decimal(number) * mult
    except InvalidOperation:
        return None
    if resource_type == VCORE and suffix != "m":
        exact *= 1000
    if exact != exact.to_integral_value() or exact < 0:
        return None
    return format_quantity(int(exact), resource_type)


def format_quantity(value: int, resource_type: str) -> str:
    """The shortest config spelling that :func:`parse_quantity` reads back to *value*.

    >>> format_quantity(10000, "vcore"), format_quantity(8000000000, "memory")
    ('10', '8G')
    >>> format_quantity(110, "pods"), format_quantity(0, "memory")
    ('110', '0')
    """
    if value < 0:
        raise QuantityError(f"negative quantity {value} for {resource_type} cannot be written")
    if resource_type == VCORE:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value and is_byte_type(resource_type):
        # the shortest exact spelling; binary first on a tie (64Gi rather than 68719476736)
        candidates = [str(value)]
        for table in (DECIMAL_SUFFIXES, BINARY_SUFFIXES):
            for suffix, mult in reversed(table.items()):
                if value % mult == 0:
                    candidates.append(f"{value // mult}{suffix}")
                    break
        return min(reversed(candidates), key=len)
    return str(value)


def is_byte_type(resource_type: str) -> bool:
    """Whether a resource type counts bytes (memory, storage, hugepages): the one rule
    for config spellings and for the units the pages show.

    >>> [is_byte_type(t) for t in ("memory", "hugepages-2Mi", "gpu-memory", "vcore", "pods")]
    [True, True, True, False, False]
    """
    return resource_type.startswith("hugepages-") or resource_type.endswith(_BYTE_TYPES)


def format_resource(resource: Mapping[str, int] | None) -> str:
    """A readable resource for messages: ``{vcore: 10, memory: 48Gi}``; ``not set`` for None.

    >>> format_resource({"vcore": 12000, "memory": 51539607552})
    '{vcore: 12, memory: 48Gi}'
    """
    if resource is None:
        return "not set"
    parts = []
    for t, q in resource.items():
        parts.append(f"{t}: {format_quantity(q, t) if q >= 0 else '-' + format_quantity(-q, t)}")
    return "{" + ", ".join(parts) + "}"


# ---------------------------------------------------------------- Go durations


def go_duration_string(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of *seconds* (whole nanoseconds).

    >>> go_duration_string(5400), go_duration_string(0), go_duration_string(0.5)
    ('1h30m0s', '0s', '500ms')
    """
    ns = round(seconds * 10**9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 10**9:
        for unit, size in (("ms", 10**6), ("\u00b5s", 10**3)):
            if u >= size:
                return sign + _trim_fraction(u, size) + unit
        return f"{sign}{u}ns"
    secs, frac = divmod(u, 10**9)
    hours, rem = divmod(secs, 3600)
    minutes, sec = divmod(rem, 60)
    sec_text = str(sec) + (("." + f"{frac:09d}".rstrip("0")) if frac else "") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{sec_text}"
    if minutes:
        return f"{sign}{minutes}m{sec_text}"
    return sign + sec_text


def _trim_fraction(value: int, size: int) -> str:
    whole, frac = divmod(value, size)
    if not frac:
        return str(whole)
    width = len(str(size)) - 1
    return f"{whole}." + f"{frac:0{width}d}".rstrip("0")


def short_duration(seconds: float) -> str:
    """A compact Go duration for messages: Go's string without zero parts.

    >>> short_duration(7200), short_duration(90), short_duration(600)
    ('2h', '1m30s', '10m')
    """
    text = go_duration_string(seconds)
    if text.endswith("m0s"):
        text = text[:-2]
    if text.endswith("h0m"):
        text = text[:-2]
    return text


# ------------------------------------------------------- quota preemption delays

#: The longest delay the config hand-back writes: Go's ``time.Duration`` is int64
#: nanoseconds (≈ 292 years); whole seconds, so the written duration parses back.
MAX_DELAY_SECONDS = float((2**63 - 1) // 10**9)

#: Go's resolution: the scheduler reads durations in whole nanoseconds.
DELAY_RESOLUTION_SECONDS = 1e-9


class DelayRangeError(ValueError):
    """A quota preemption delay the scheduler cannot be given as it was meant."""


def check_delay_seconds(seconds: float) -> float:
    """A quota preemption delay checked once for the API, the forms and the config hand-back.

    Accepted: 0 (the scheduler never enforces a lowered max), or a finite number of
    seconds from Go's resolution of 1ns up to the longest ``time.Duration`` in whole
    seconds.  A positive delay below 1ns is refused rather than stored: the hand-back
    would write it as ``0s``, which the scheduler reads as "never enforce" while the
    dashboard would fire it at once.  The value is returned rounded to whole
    nanoseconds, which is exactly what the scheduler reads back from the written text.

    >>> check_delay_seconds(300), check_delay_seconds(1.0000000004), check_delay_seconds(0)
    (300.0, 1.0, 0.0)
    >>> check_delay_seconds(float("nan"))
    Traceback (most recent call last):
    ...
    dashboard.importers.quantities.DelayRangeError: must be a finite number of seconds
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise DelayRangeError("must be a number of seconds or a duration such as 5m")
    value = float(seconds)
    if value != value or value in (float("inf"), float("-inf")):
        raise DelayRangeError("must be a finite number of seconds")
    if value < 0:
        raise DelayRangeError("must not be negative")
    if value > MAX_DELAY_SECONDS:
        raise DelayRangeError(
            f"{value:g}s is longer than the longest delay the scheduler accepts "
            f"({short_duration(MAX_DELAY_SECONDS)}, about 292 years: Go's time.Duration)"
        )
    if 0 < value < DELAY_RESOLUTION_SECONDS:
        raise DelayRangeError(
            f"{value:g}s is below 1ns, the scheduler's resolution: it would read the "
            "delay as 0s and never enforce the change; give 0 to disable, or at least 1ns"
        )
    return round(value * 10**9) / 10**9
