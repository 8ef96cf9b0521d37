"""Command line: ``python -m engine FILE.json`` (``-`` reads stdin) prints one JSON answer.

Exit 0 with the answer; bad input (unreadable file, bad JSON, a validation
error) exits 2 printing exactly one object ``{"error": "..."}`` that names the
offending field, never a traceback.  An unexpected failure exits 1, also as
one JSON object.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Sequence

from engine import evaluate
from engine.errors import ScenarioError
from engine.model import Allocation
from engine.scenario import parse_scenario
from engine.scenario_typed import decode_typed

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2

USAGE = "usage: python -m engine SCENARIO.json (or - for stdin)"


class _HugeInt:
    """A JSON integer too long for Python's int conversion, kept so validation can name it."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _HugeInt:
    return int(text) if len(text) <= 4000 else _HugeInt(text)


def _decode(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError as exc:
        if "digits" not in str(exc) or isinstance(exc, json.JSONDecodeError):
            raise
    # a number longer than Python's integer-digit limit: decode again, keeping it
    # as an opaque value so the validation error names the field it sits in
    return json.loads(raw, parse_int=_parse_int)


def _emit(obj: object) -> None:
    sys.stdout.write(json.dumps(obj))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    _emit({"error": message})
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    # A short-lived process building ~10 objects per allocation: the cyclic garbage
    # collector would rescan them over and over and find nothing (no cycles here).
    gc.disable()
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        return _fail(USAGE)
    path = args[0]
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                raw = fh.read()
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    typed = decode_typed(raw)
    if typed is not None:
        return _answer(*typed)
    try:
        data = _decode(raw)
    except RecursionError:
        return _fail("invalid JSON: nested too deeply")
    except MemoryError:
        return _fail("invalid JSON: input too large")
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return _fail(f"invalid JSON: {exc}")
    return _answer(data, None)


def _answer(data: object, built: Sequence[Allocation] | None) -> int:
    """Evaluate the decoded document (*built*: its allocations' objects, when made)."""
    try:
        answer = evaluate(parse_scenario(data, built_allocations=built)).to_dict()
    except ScenarioError as exc:
        return _fail(str(exc))
    except RecursionError:
        return _fail("scenario: nested too deeply")
    except MemoryError:
        return _fail("scenario: too large to evaluate")
    except Exception as exc:  # never a traceback: report it as one JSON object
        return _fail(f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL)
    _emit(answer)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
