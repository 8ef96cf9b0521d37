"""Typed access to YuniKorn's JSON answers, naming the file and key of anything wrong."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from dashboard.importers.errors import ImportFailure
from dashboard.importers.quantities import (
    QuantityError,
    check_resource_type,
)

G = TypeVar("G")

#: The integer ranges of Go's int64 and int32, which YuniKorn's numbers are read within.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_TRUE_WORDS = frozenset({"1", "t", "T", "TRUE", "true", "True"})


_FALSE_WORDS = frozenset({"0", "f", "F", "FALSE", "false", "False"})

#: Resource type names already found well-formed (a cluster uses a handful, in every
#: one of its hundreds of thousands of resource maps); bounded against odd input.
_CHECKED_TYPES: set[str] = set()
_MAX_CHECKED_TYPES = 4096


def _tname(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object"


def _loc(file: str, path: str) -> str:
    return f"{file}: {path}" if path else file


class Reader:
    """Typed access to one file's JSON with error locations ``file: json.path``."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> ImportFailure:
        return ImportFailure(message, _loc(self.file, path))

    def obj(self, v: object, path: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(path, f"must be an object, not {_tname(v)}")
        return v

    def arr(self, v: object, path: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(path, f"must be a list, not {_tname(v)}")
        return v

    def string(self, v: object, path: str, *, required: bool = True) -> str:
        if v is None and not required:
            return ""
        if not isinstance(v, str):
            raise self.fail(
                path, "is required" if v is None else f"must be a string, not {_tname(v)}"
            )
        return v

    def key(self, v: object, path: str) -> str:
        s = self.string(v, path)
        if not s:
            raise self.fail(path, "must not be empty")
        return s

    def integer(self, v: object, path: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise self.fail(path, f"must be an integer, not {_tname(v)}")
        if not lo <= v <= hi:
            raise self.fail(path, f"{v} is out of range ({lo} .. {hi})")
        return v

    def flag(self, d: Mapping[str, Any], k: str, path: str, default: bool = False) -> bool:
        # omitempty: an absent boolean is false
        v = d.get(k)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(f"{path}.{k}", f"must be true or false, not {_tname(v)}")
        return v

    def resource(self, v: object, path: str, *, negative: bool = False) -> dict[str, int]:
        """A REST resource map; quantities are int64, non-negative unless *negative*."""
        if v is None:
            return {}
        if type(v) is dict:
            # the common case, checked without a path or a message: well-formed types
            # already seen, plain int64 quantities in range
            lo = INT64_MIN if negative else 0
            for t, q in v.items():
                if t not in _CHECKED_TYPES or type(q) is not int or not lo <= q <= INT64_MAX:
                    break
            else:
                return dict(v)
        d = self.obj(v, path)
        out: dict[str, int] = {}
        for t, q in d.items():
            try:
                check_resource_type(t)
            except QuantityError as exc:
                raise self.fail(f"{path}.{t}", str(exc)) from None
            if len(_CHECKED_TYPES) < _MAX_CHECKED_TYPES:
                _CHECKED_TYPES.add(t)
            if isinstance(q, bool) or not isinstance(q, int):
                if isinstance(q, float) and q.is_integer():
                    q = int(q)
                else:
                    raise self.fail(f"{path}.{t}", f"quantity must be an integer, not {_tname(q)}")
            if q > INT64_MAX or q < INT64_MIN:
                raise self.fail(f"{path}.{t}", f"quantity {q} is beyond int64 (absurd)")
            if q < 0 and not negative:
                raise self.fail(f"{path}.{t}", f"negative quantity {q}")
            out[t] = q
        return out

    def priority(self, v: object, path: str) -> int:
        # AllocationDAOInfo.Priority is a string ("-10"); accept a number too
        if v is None:
            return 0
        if isinstance(v, str):
            text = v.strip()
            if not text or not text.lstrip("+-").isdigit() or not text.isascii():
                raise self.fail(path, f"priority {v!r} is not an integer")
            v = int(text)
        return self.integer(v, path, INT32_MIN, INT32_MAX)

    def time_ns(self, v: object, path: str) -> float | None:
        if v is None:
            return None
        ns = self.integer(v, path)
        return ns / 1e9


def _drop_zeros(r: Mapping[str, int]) -> dict[str, int]:
    return {t: q for t, q in r.items() if q != 0}


def _add_into(acc: dict[str, int], r: Mapping[str, int]) -> None:
    for t, q in r.items():
        acc[t] = acc.get(t, 0) + q


def shared_map_counts(
    items: Iterable[tuple[G, Mapping[str, int]]],
) -> list[tuple[G, Mapping[str, int], int]]:
    """*items*' (group, resource map) pairs as (group, map, how many times the group holds
    that very map), in the order the group first holds each map.

    An import's allocations share their equal resource maps (held once), so a sum per
    group adds each shared map once times its count instead of once per allocation,
    with the resource types in the order the allocations first hold them. The maps are
    held here, so no other map can take one's id meanwhile.
    """
    counted: dict[tuple[G, int], list[Any]] = {}
    for group, res in items:
        seen = counted.get((group, id(res)))
        if seen is None:
            counted[(group, id(res))] = [group, res, 1]
        else:
            seen[2] += 1
    return [(group, res, count) for group, res, count in counted.values()]


def _sub(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for t, q in b.items():
        out[t] = out.get(t, 0) - q
    return _drop_zeros(out)
