"""JSON read safely: no NaN or Infinity, no repeated keys, bounded depth.

Two decoders give the same answers and the same refusals. msgspec decodes a large
answer several times faster than the standard library but keeps the last of repeated
keys, so its result is taken only when a count proves no key was repeated (and the
depth is within bounds); anything else (invalid JSON, a repeated key, a count that
cannot vouch) goes through the standard library's decoder, which names what is wrong.
"""

from __future__ import annotations

import gc
import json
import re
from typing import Any

import msgspec

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.result import MAX_JSON_DEPTH

#: A key followed by white space before its colon: the raw count below would miss it.
_SPACED_COLON = re.compile(rb'"[ \t\r\n]+:')


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; only an object with a repeated key is walked again
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"duplicate key {k!r}")
            seen.add(k)
    return out


def load_json(name: str, data: bytes) -> Any:
    """Decode one JSON file safely: UTF-8 only, no NaN, no duplicate keys, bounded depth."""
    doc = _fast_load(data)
    if doc is not _UNVOUCHED:
        return doc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailure(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", name
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ImportFailure(
            f"invalid JSON: {exc.msg}", f"{name}: line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ImportFailure(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", name) from None
    except ValueError as exc:
        raise ImportFailure(f"invalid JSON: {exc}", name) from None
    _check_depth(doc, name)
    return doc


def _check_depth(doc: Any, name: str) -> None:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ImportFailure(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", name)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))


_UNVOUCHED = object()


def _fast_load(data: bytes) -> Any:
    """*data* decoded by msgspec when that is provably what :func:`load_json` answers.

    Returns ``_UNVOUCHED`` when it cannot vouch: the caller then decodes safely.

    Every key of a JSON text ends with an unescaped quote directly followed by a
    colon (white space there is refused below), so the number of ``":`` in the text,
    less those whose quote is escaped (``\\":``; ``\\\\":`` is refused as
    ambiguous), is at least the number of keys: equal to it unless a string value
    holds such bytes. A repeated key leaves the decoded objects with fewer keys
    than that. Equal counts therefore mean no repeated key; any difference sends
    the text to the careful decoder (which finds the repeated key, or decodes a
    text whose strings merely look like keys).
    """
    if b'\\\\":' in data or _SPACED_COLON.search(data):
        return _UNVOUCHED
    raw_keys = data.count(b'":') - data.count(b'\\":')
    enabled = gc.isenabled()
    gc.disable()  # millions of new containers, none cyclic: collections find nothing
    try:
        doc = msgspec.json.decode(data)
        keys = _count_keys(doc)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return _UNVOUCHED
    finally:
        if enabled:
            gc.enable()
    if keys is None or keys != raw_keys:
        return _UNVOUCHED
    return doc


def _count_keys(doc: Any) -> int | None:
    """The number of keys of every object in *doc*, or None beyond the depth bound."""
    keys = 0
    level = [doc]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            return None
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                keys += len(value)
                below += [v for v in value.values() if type(v) is dict or type(v) is list]
            elif type(value) is list:
                below += [v for v in value if type(v) is dict or type(v) is list]
        level = below
    return keys
