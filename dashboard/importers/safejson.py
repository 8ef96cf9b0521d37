"""JSON read safely: no NaN or Infinity, no repeated keys, bounded depth.

Two decoders give the same answers and the same refusals. msgspec decodes a large
answer much faster than the standard library but keeps the last of repeated
keys, so its result is taken only when it is proven that no key was repeated (the
text is msgspec's own writing of the result, or a count of keys agrees) and that the
depth is within bounds; anything else (invalid JSON, a repeated key, a proof that
cannot vouch) goes through the standard library's decoder, which names what is wrong.
"""

from __future__ import annotations

import gc
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import msgspec

from dashboard.importers.errors import ImportFailure

MAX_JSON_DEPTH = 100
"""Deepest JSON nesting accepted (a queue level uses two: ``children`` and the object)."""

#: A key followed by white space before its colon: the raw count below would miss it.
_SPACED_COLON = re.compile(rb'"[ \t\r\n]+:')


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent, refused when it overflows to infinity
    (``1e400``: msgspec refuses it too; the standard library would read ``inf``)."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


#: Python's ``int()`` refuses longer numbers (``sys.get_int_max_str_digits()``).
MAX_INT_DIGITS = 4300


def bounded_int(text: str) -> int:
    """A JSON integer; one too long for ``int()`` is refused as too long a number (Python's
    own message names ``sys.set_int_max_str_digits()``, which no reader can act on).
    Numbers up to that length reach the checks of their field (int64 for quantities).

    >>> bounded_int("-12")
    -12
    """
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise ValueError(
            f"the number {text[:12]}... is {digits} digits long, too long for a quantity "
            "or any other number here (a quantity is at most 19 digits, int64)"
        )
    return int(text)


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
        doc = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_no_constants,
            parse_float=_finite,
            parse_int=bounded_int,
        )
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

    Two proofs that no key was repeated, the cheaper first:

    - **The text is msgspec's own.** msgspec writes each key of a dict once, so when
      encoding the decoded document gives back *data* byte for byte (compact text,
      strings escaped as msgspec escapes them: the scheduler's own answers), every
      object of *data* is one of those dicts written out, and none repeats a key.
    - **A count.** Otherwise every key of a JSON text ends with an unescaped quote
      directly followed by a colon (white space there is refused below), so the
      number of ``":`` in the text, less those whose quote is escaped (``\\":``;
      ``\\\\":`` is refused as ambiguous), is at least the number of keys: equal to it
      unless a string value holds such bytes. A repeated key leaves the decoded
      objects with fewer keys than that. Equal counts therefore mean no repeated key;
      any difference sends the text to the careful decoder (which finds the repeated
      key, or decodes a text whose strings merely look like keys).

    The depth bound is proven by the decoder itself where it can be
    (:func:`_bounded_decode`), else by walking the document.
    """
    enabled = gc.isenabled()
    gc.disable()  # millions of new containers, none cyclic: collections find nothing
    try:
        doc, bounded = _bounded_decode(data)
        if _writes_back(doc, data):
            if bounded or _within_depth(doc):
                return doc
            return _UNVOUCHED
        if b'\\\\":' in data or _SPACED_COLON.search(data):
            return _UNVOUCHED
        raw_keys = data.count(b'":') - data.count(b'\\":')
        keys = _count_keys(doc)
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        return _UNVOUCHED
    finally:
        if enabled:
            gc.enable()
    if keys is None or keys != raw_keys:
        return _UNVOUCHED
    return doc


#: Nested one level deeper than allowed: what the decoder must refuse for its bound to hold.
_TOO_DEEP = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)


def _bounded_decode(data: bytes) -> tuple[Any, bool]:
    """msgspec's decoding of *data*, and whether it proved the depth bound.

    msgspec counts each level of nesting against the interpreter's recursion limit
    (``RecursionError`` past it). In a process running one thread (the command line,
    a single-threaded worker) the limit is lowered for the decode to this frame's
    depth plus :data:`MAX_JSON_DEPTH`, and the proof is taken only if a document one
    level too deep, decoded from this very frame, is refused: then anything deeper
    than the bound raises (and goes to the careful decoder). A lowered limit would
    cut other threads' stacks short, so with more than one thread, or if the probe
    passes (an interpreter counting otherwise), the caller walks the document.
    """
    if threading.active_count() != 1:
        return msgspec.json.decode(data), False
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(depth + MAX_JSON_DEPTH)
    except RecursionError:  # deeper than that already (C frames count too)
        return msgspec.json.decode(data), False
    try:
        try:
            msgspec.json.decode(_TOO_DEEP)
        except RecursionError:
            return msgspec.json.decode(data), True
    finally:
        sys.setrecursionlimit(old)
    return msgspec.json.decode(data), False


def _writes_back(doc: Any, data: bytes) -> bool:
    """Whether msgspec encodes *doc* as *data*, byte for byte.

    Compared a piece at a time (the top-level items, and the items of a top-level
    object's values) through one reused buffer, so that no second copy of a large
    answer is held.
    """
    try:
        return _same_text(doc, data, 0, 1, msgspec.json.Encoder().encode_into, bytearray()) == len(
            data
        )
    except (msgspec.MsgspecError, UnicodeError, TypeError, ValueError, OverflowError):
        return False


def _same_text(
    value: Any,
    data: bytes,
    pos: int,
    split: int,
    encode_into: Callable[[Any, bytearray], None],
    buf: bytearray,
) -> int:
    """Where *value*'s text ends if *data* holds it (as msgspec writes it) at *pos*, else -1.

    A plain function, not a closure: a recursive closure is a reference cycle, and
    with the collector paused it would keep *data* (the whole answer) alive.
    """
    if split and type(value) is list:
        if data[pos : pos + 1] != b"[":
            return -1
        pos += 1
        for i, item in enumerate(value):
            if i:
                if data[pos : pos + 1] != b",":
                    return -1
                pos += 1
            pos = _same_text(item, data, pos, split - 1, encode_into, buf)
            if pos < 0:
                return -1
        return pos + 1 if data[pos : pos + 1] == b"]" else -1
    if split and type(value) is dict:
        if data[pos : pos + 1] != b"{":
            return -1
        pos += 1
        for i, (key, item) in enumerate(value.items()):
            if i:
                if data[pos : pos + 1] != b",":
                    return -1
                pos += 1
            pos = _same_text(key, data, pos, 0, encode_into, buf)
            if pos < 0 or data[pos : pos + 1] != b":":
                return -1
            # a wrapper object's values (a state dump's lists) are split once more
            pos = _same_text(item, data, pos + 1, split, encode_into, buf)
            if pos < 0:
                return -1
        return pos + 1 if data[pos : pos + 1] == b"}" else -1
    encode_into(value, buf)
    if not data.startswith(buf, pos):
        return -1
    return pos + len(buf)


class _TooDeep(Exception):
    """A document nests deeper than :data:`MAX_JSON_DEPTH`."""


def _container_levels(doc: Any) -> Iterator[list[Any]]:
    """*doc*'s values level by level, top first (below the top only dicts and lists);
    raises :class:`_TooDeep` on reaching a level past :data:`MAX_JSON_DEPTH`."""
    level = [doc]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            raise _TooDeep
        yield level
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                below += [v for v in value.values() if type(v) is dict or type(v) is list]
            elif type(value) is list:
                below += [v for v in value if type(v) is dict or type(v) is list]
        level = below


def _within_depth(doc: Any) -> bool:
    """Whether *doc* nests no deeper than :data:`MAX_JSON_DEPTH`."""
    try:
        for _ in _container_levels(doc):
            pass
    except _TooDeep:
        return False
    return True


def _count_keys(doc: Any) -> int | None:
    """The number of keys of every object in *doc*, or None beyond the depth bound."""
    try:
        return sum(
            len(value) for level in _container_levels(doc) for value in level if type(value) is dict
        )
    except _TooDeep:
        return None
