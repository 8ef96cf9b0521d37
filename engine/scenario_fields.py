"""Reading one JSON value of a scenario as the type the contract wants, naming its field.

Each ``read_*`` helper returns the value or raises
:class:`~engine.errors.ScenarioError` whose ``field`` is the JSON path given
(``allocations[3].created``) and whose message says what was expected and what
came.  The hot loops of parsing test the common case inline and call these
only when that test fails.
"""

from __future__ import annotations

import math
from typing import Any

from engine.errors import ScenarioError
from engine.queues import INT32_MAX, INT32_MIN, parse_priority_offset
from engine.resources import MAX_QUANTITY

_QUANTITY_MSG = "must be an integer between 0 and 2**63-1"


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def read_object(value: object, field: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise ScenarioError(field, f"must be an object, not {type_name(value)}")
    return value


def read_list(value: object, field: str) -> list[Any]:
    if type(value) is not list:
        raise ScenarioError(field, f"must be a list, not {type_name(value)}")
    return value


def read_string(value: object, field: str) -> str:
    if type(value) is not str:
        raise ScenarioError(field, f"must be a string, not {type_name(value)}")
    return value


def read_key(value: object, field: str) -> str:
    if type(value) is not str:
        if value is None:
            raise ScenarioError(field, "is required")
        raise ScenarioError(field, f"must be a string, not {type_name(value)}")
    if not value:
        raise ScenarioError(field, "must not be empty")
    return value


def read_bool(value: object, field: str) -> bool:
    if type(value) is not bool:
        raise ScenarioError(field, f"must be true or false, not {type_name(value)}")
    return value


def read_number(value: object, field: str) -> float:
    if type(value) is int:
        if abs(value) > 2**1000:  # float() would overflow
            raise ScenarioError(field, "is too large")
        return float(value)
    if type(value) is float and math.isfinite(value):
        return value
    raise ScenarioError(field, f"must be a finite number, not {type_name(value)}")


def read_int32(value: object, field: str) -> int:
    if type(value) is int:
        q = value
    elif type(value) is float and value.is_integer():
        q = int(value)
    else:
        raise ScenarioError(field, "must be a 32-bit signed integer")
    if q < INT32_MIN or q > INT32_MAX:
        raise ScenarioError(field, "must be a 32-bit signed integer")
    return q


def read_resource(value: object, field: str, *, drop_zeros: bool) -> dict[str, int]:
    """A JSON resource object; raises naming ``field.type`` for a bad quantity."""
    if type(value) is not dict:
        if value is None:
            raise ScenarioError(field, "is required")
        raise ScenarioError(field, f"must be an object, not {type_name(value)}")
    out: dict[str, int] = {}
    for t, q in value.items():
        if type(q) is not int:
            if type(q) is float and q.is_integer():
                q = int(q)
            else:
                raise ScenarioError(f"{field}.{t}", _QUANTITY_MSG)
        if q < 0 or q > MAX_QUANTITY:
            raise ScenarioError(f"{field}.{t}", _QUANTITY_MSG)
        if q or not drop_zeros:
            out[t] = q
    return out


def read_optional_limit(value: object, field: str) -> dict[str, int] | None:
    # guaranteed/max: missing, null or {} mean "not set"; zeros are kept ({"gpu": 0} forbids GPUs)
    if value is None:
        return None
    return read_resource(value, field, drop_zeros=False) or None


def read_properties(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    raw = read_object(value, field)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if type(v) is str:
            out[k] = v
        elif type(v) is int or (type(v) is float and math.isfinite(v)):
            # YuniKorn properties are strings; accept a bare JSON number as its text
            out[k] = str(int(v)) if type(v) is float and v.is_integer() else str(v)
        else:
            raise ScenarioError(f"{field}.{k}", "must be a string")
    offset = out.get("priority.offset")
    if offset is not None:
        parsed = parse_priority_offset(offset)
        # an integer outside 32 bits is bad input; a non-numeric text is read as 0 (engine.md 0.1)
        if parsed is not None and not INT32_MIN <= parsed <= INT32_MAX:
            raise ScenarioError(f"{field}.priority.offset", "must be a 32-bit signed integer")
    return out
