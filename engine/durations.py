"""Go ``time.ParseDuration`` strings, exactly as the scheduler reads them.

YuniKorn reads ``preemption.delay`` and ``quota.preemption.delay`` with Go's
parser: units ``ns us µs μs ms s m h`` only, a unit after every number except
a lone ``0``, ASCII digits, fractions truncated to whole nanoseconds, and a
range of int64 nanoseconds.  Libraries such as durationpy are more lenient
(days, weeks, gaps between parts, microsecond precision), which would make the
dashboard accept delays the scheduler ignores, so the grammar lives here, once
for the engine and the importers.

>>> parse_go_duration("1h30m"), parse_go_duration("-1.5s"), parse_go_duration("0")
(5400.0, -1.5, 0.0)
>>> parse_go_duration("7200") is None, parse_go_duration("2d") is None
(True, True)
>>> parse_go_duration_ns("1.5ns")
1

Two faces of the one parser: ``parse_go_duration`` answers ``None`` for a text
Go refuses; ``read_go_duration`` raises :class:`DurationSyntaxError` saying why,
in words for administrators.

>>> read_go_duration("90s"), parse_go_duration("90")
(90.0, None)
"""

from __future__ import annotations

import re
from functools import lru_cache

GO_UNIT_NS: dict[str, int] = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,  # micro sign
    "\u03bcs": 10**3,  # greek small letter mu
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_UNITS = "ns|us|\u00b5s|\u03bcs|ms|s|m|h"
# ASCII digits only: Python's \d also matches other scripts' digits, Go's parser does not.
_PART = rf"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:{_UNITS})"
DURATION_SYNTAX = re.compile(rf"[+-]?(?:0|(?:{_PART})+)")
"""Go's grammar of a duration (range not checked)."""
_PIECE = re.compile(rf"([0-9]*)(?:\.([0-9]*))?({_UNITS})")
_INT64_MAX = 2**63 - 1


@lru_cache(maxsize=1024)
def parse_go_duration_ns(text: str) -> int | None:
    """Whole nanoseconds of a Go duration, or ``None`` where Go refuses the text."""
    if DURATION_SYNTAX.fullmatch(text) is None:
        return None
    negative = text.startswith("-")
    body = text.lstrip("+-")
    if body == "0":
        return 0
    ns = 0
    for whole, frac, unit in _PIECE.findall(body):
        size = GO_UNIT_NS[unit]
        ns += int(whole or "0") * size
        if frac:
            ns += int(frac) * size // 10 ** len(frac)  # Go truncates to whole nanoseconds
    if ns > _INT64_MAX + (1 if negative else 0):
        return None  # Go reports an int64 overflow
    return -ns if negative else ns


def parse_go_duration(text: str) -> float | None:
    """Seconds of a Go duration string, or ``None`` where Go refuses the text."""
    ns = parse_go_duration_ns(text)
    return None if ns is None else ns / 1e9


class DurationSyntaxError(ValueError):
    """Text that Go's ``time.ParseDuration`` refuses; the message says why."""


def read_go_duration_ns(text: str) -> int:
    """Exact nanoseconds of a Go duration (fractions truncated as Go does).

    Raises:
        DurationSyntaxError: where Go refuses the text, saying why.

    >>> read_go_duration_ns("1.5s"), read_go_duration_ns("-0")
    (1500000000, 0)
    """
    ns = parse_go_duration_ns(text)
    if ns is None:
        raise DurationSyntaxError(_duration_problem(text))
    return ns


def read_go_duration(text: str) -> float:
    """Seconds of a Go duration string; raises :class:`DurationSyntaxError` where Go would.

    >>> read_go_duration("7200s"), read_go_duration("2h"), read_go_duration("-1.5s")
    (7200.0, 7200.0, -1.5)
    """
    return read_go_duration_ns(text) / 1e9


def _duration_problem(text: str) -> str:
    if not text:
        return "invalid duration '': empty"
    if DURATION_SYNTAX.fullmatch(text):
        return f"invalid duration {text!r}: beyond Go's limit of about 292 years"
    body = text.lstrip("+-")
    if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+", body):
        return (
            f"invalid duration {text!r}: missing unit (Go durations need one of "
            "ns us ms s m h, e.g. 7200s or 2h)"
        )
    if any(c.isspace() for c in text):
        return f"invalid duration {text!r}: spaces are not allowed"
    m = re.search(r"[0-9.]([a-zA-Z\u00b5\u03bc]+)", body)
    if m and m.group(1) not in GO_UNIT_NS:
        return f"invalid duration {text!r}: unknown unit {m.group(1)!r} (Go knows ns us ms s m h)"
    return f"invalid duration {text!r}: not a Go duration such as 90s, 5m or 1h30m"
