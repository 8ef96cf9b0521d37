"""JSON read safely: no NaN or Infinity, no repeated keys, bounded depth."""

from __future__ import annotations

import json
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.result import MAX_JSON_DEPTH


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
