"""dashboard.importers.quantities: YuniKorn quantities and Go durations, both ways."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.importers.quantities import (
    INT64_MAX,
    QuantityError,
    check_resource_type,
    format_quantity,
    format_resource,
    go_duration_string,
    parse_quantity,
    short_duration,
)
from engine.durations import DurationSyntaxError, read_go_duration, read_go_duration_ns

GI = 2**30


@pytest.mark.parametrize(
    ("text", "rtype", "expected"),
    [
        ("0", "memory", 0),
        ("1", "pods", 1),
        (" 25k ", "pods", 25_000),
        ("2 5k", "pods", 25_000),  # Go strips every whitespace character
        ("9223372036854775807", "pods", INT64_MAX),
        ("2k", "memory", 2_000),
        ("3M", "memory", 3_000_000),
        ("8G", "memory", 8_000_000_000),
        ("5T", "memory", 5 * 10**12),
        ("6P", "memory", 6 * 10**15),
        ("7E", "memory", 7 * 10**18),
        ("2Ki", "memory", 2048),
        ("3Mi", "memory", 3 * 2**20),
        ("96Gi", "memory", 96 * GI),
        ("5Ti", "memory", 5 * 2**40),
        ("6Pi", "memory", 6 * 2**50),
        ("7Ei", "ephemeral-storage", 7 * 2**60),
        ("+4", "nvidia.com/gpu", 4),
        # vcore: whole cores in, millicores out; only vcore takes "m"
        ("1", "vcore", 1000),
        ("10", "vcore", 10_000),
        ("500m", "vcore", 500),
        ("4000m", "vcore", 4000),
        ("2k", "vcore", 2_000_000),
        ("9223372036854775", "vcore", 9_223_372_036_854_775_000),
    ],
)
def test_parse_quantity_accepts_yunikorn_syntax(text: str, rtype: str, expected: int) -> None:
    """Integers with k M G T P E / Ki..Ei suffixes; vcore counts millicores."""
    assert parse_quantity(text, rtype) == expected


@pytest.mark.parametrize(
    ("text", "rtype", "problem"),
    [
        ("1.5Gi", "memory", "decimals are not allowed"),
        ("0.5", "vcore", "decimals are not allowed"),
        ("500m", "memory", "only allowed for vcore"),
        ("10K", "memory", "case-sensitive"),
        ("5X", "memory", "unknown suffix 'X'"),
        ("16GB", "memory", "without B"),
        ("-1", "memory", "negative"),
        ("-2k", "vcore", "negative"),
        ("9223372036854775808", "pods", "overflow"),
        ("1000E", "memory", "overflow"),
        ("9223372036854776", "vcore", "overflow"),
        ("7E", "vcore", "overflow"),
        ("1e3", "memory", "expected an integer"),
        ("0x10", "pods", "expected an integer"),
        ("1_000", "pods", "expected an integer"),
        ("", "memory", "expected an integer"),
        ("\u0664", "pods", "expected an integer"),  # Arabic-Indic digit: Go reads ASCII only
    ],
)
def test_parse_quantity_refuses_what_the_scheduler_refuses(
    text: str, rtype: str, problem: str
) -> None:
    """Each refusal says why."""
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, rtype)
    assert problem in str(info.value)


def test_decimal_hint_gives_an_exact_integer_spelling() -> None:
    """1.5Gi is refused with its exact integer spelling (1536Mi); 0.5 cores as 500m."""
    with pytest.raises(QuantityError, match="write 1536Mi"):
        parse_quantity("1.5Gi", "memory")
    with pytest.raises(QuantityError, match="write 500m"):
        parse_quantity("0.5", "vcore")


@pytest.mark.parametrize(
    ("value", "rtype", "expected"),
    [
        (10_000, "vcore", "10"),
        (500, "vcore", "500m"),
        (64 * GI, "memory", "64Gi"),
        (8_000_000_000, "memory", "8G"),
        (51539607552, "memory", "48Gi"),
        (1536 * 2**20, "memory", "1536Mi"),
        (110, "pods", "110"),
        (4, "nvidia.com/gpu", "4"),
        (0, "memory", "0"),
        (1000, "pods", "1000"),
    ],
)
def test_format_quantity(value: int, rtype: str, expected: str) -> None:
    """The shortest exact spelling; bytes get suffixes, counts stay plain."""
    assert format_quantity(value, rtype) == expected


@given(
    value=st.integers(min_value=0, max_value=INT64_MAX),
    rtype=st.sampled_from(["vcore", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"]),
)
def test_format_then_parse_is_identity(value: int, rtype: str) -> None:
    """Every int64 quantity is written so that the scheduler reads back the same value."""
    assert parse_quantity(format_quantity(value, rtype), rtype) == value


def test_format_resource_for_messages() -> None:
    """Readable resources in messages, with negative values kept."""
    assert format_resource({"vcore": 12000, "memory": 48 * GI}) == "{vcore: 12, memory: 48Gi}"
    assert format_resource({"vcore": -2000}) == "{vcore: -2}"
    assert format_resource(None) == "not set"


@pytest.mark.parametrize("name", ["vcore", "memory", "nvidia.com/gpu", "hugepages-2Mi", "pods"])
def test_resource_type_names_accepted(name: str) -> None:
    """Kubernetes resource names pass."""
    check_resource_type(name)


@pytest.mark.parametrize("name", ["", "my gpu", "<b>gpu</b>", "gpu/", "/gpu", "a/b/c", "-x"])
def test_resource_type_names_refused(name: str) -> None:
    """Empty or malformed names are refused."""
    with pytest.raises(QuantityError):
        check_resource_type(name)


# ---------------------------------------------------------------- Go durations

GO_VALID = [
    # the table of Go's time.ParseDuration tests (src/time/time_test.go), in seconds
    ("0", 0.0),
    ("5s", 5.0),
    ("30s", 30.0),
    ("1478s", 1478.0),
    ("-5s", -5.0),
    ("+5s", 5.0),
    ("-0", 0.0),
    ("+0", 0.0),
    ("5.0s", 5.0),
    ("5.6s", 5.6),
    ("5.s", 5.0),
    (".5s", 0.5),
    ("1.004s", 1.004),
    ("100.00100s", 100.001),
    ("10ns", 10e-9),
    ("11us", 11e-6),
    ("12\u00b5s", 12e-6),
    ("12\u03bcs", 12e-6),
    ("13ms", 0.013),
    ("15m", 900.0),
    ("16h", 57600.0),
    ("3h30m", 12600.0),
    ("10.5s4m", 250.5),
    ("-2m3.4s", -123.4),
    ("39h9m14.425s", 39 * 3600 + 9 * 60 + 14.425),
    ("52763797000ns", 52.763797),
    ("7200s", 7200.0),
    ("2h", 7200.0),
    ("1h30m", 5400.0),
]


@pytest.mark.parametrize(("text", "seconds"), GO_VALID)
def test_parse_go_duration_valid(text: str, seconds: float) -> None:
    """What Go accepts, with Go's value."""
    assert read_go_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3",
        "7200",  # the seed's bare number: Go needs a unit
        "-",
        "s",
        ".",
        "-.",
        ".s",
        "+.s",
        "1d",  # lenient parsers know d, w, mm, y; Go does not
        "1w",
        "5mm",
        "1y",
        "5m 3s",  # lenient parsers ignore the gap between parts
        "5m_3s",
        " 5m",
        "\u0665m",  # Python's \\d reads non-ASCII digits
        "5M",
        "1e3s",
        "9223372036854775808ns",  # one past int64 nanoseconds
        "2562048h",
    ],
)
def test_parse_go_duration_refuses_what_go_refuses(text: str) -> None:
    """Go's grammar and range hold where lenient parsers would accept the text."""
    with pytest.raises(DurationSyntaxError):
        read_go_duration(text)


def test_nanoseconds_and_overflow_hold() -> None:
    """Go keeps whole nanoseconds (1ns is not 0) and refuses int64 overflow."""
    assert read_go_duration("1ns") == pytest.approx(1e-9)
    with pytest.raises(DurationSyntaxError, match="292 years"):
        read_go_duration("3000000h")


def test_int64_nanosecond_limits() -> None:
    """The largest Go duration parses; negative values may reach -2**63 ns."""
    assert read_go_duration_ns("9223372036854775807ns") == INT64_MAX
    assert read_go_duration_ns("-9223372036854775808ns") == -(2**63)
    with pytest.raises(DurationSyntaxError):
        read_go_duration_ns("-9223372036854775809ns")


def test_bare_number_message_suggests_units() -> None:
    """The error for "7200" names the missing unit and the right forms."""
    with pytest.raises(DurationSyntaxError, match=r"missing unit.*7200s or 2h"):
        read_go_duration("7200")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (30, "30s"),
        (60, "1m0s"),
        (300, "5m0s"),
        (600, "10m0s"),
        (3600, "1h0m0s"),
        (5400, "1h30m0s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (1e-6, "1\u00b5s"),
        (-90, "-1m30s"),
    ],
)
def test_go_duration_string_matches_go(seconds: float, text: str) -> None:
    """Go's Duration.String(), as the REST API prints quotaPreemptionDelay."""
    assert go_duration_string(seconds) == text
    assert read_go_duration(text) == pytest.approx(seconds)


def test_short_duration() -> None:
    """Compact spellings for messages."""
    assert [short_duration(s) for s in (7200, 90, 600, 9000, 45)] == [
        "2h",
        "1m30s",
        "10m",
        "2h30m",
        "45s",
    ]
