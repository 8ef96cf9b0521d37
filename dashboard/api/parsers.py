"""Request body parsers: DRF's, answering 400 for JSON nested too deeply and for NUL bytes.

Python's ``json`` raises ``RecursionError`` (not ``ValueError``) for a body such as
10,000 nested ``[``; DRF's parser only turns ``ValueError`` into a 400, so without
this every JSON endpoint would answer such a body with a 500.

Every parser also refuses a NUL byte in a key or string (PostgreSQL cannot store
one) with a 400 naming the field, see :mod:`dashboard.nulbytes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.utils.json import strict_constant as json_strict_constant

from dashboard.importers.safejson import bounded_int
from dashboard.names import find_unstorable
from dashboard.nulbytes import MESSAGE, NUL, find_nul_in_fields, shown


def _refuse(field: str) -> ValidationError:
    return ValidationError({field: [MESSAGE]})


#: ``\u0000`` or a UTF-16 surrogate escape (raw NUL bytes are not JSON).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key[:60]!r}")
            seen.add(key)
    return out


class JSONParser(parsers.JSONParser):
    """``rest_framework.parsers.JSONParser`` that refuses over-deep nesting, repeated keys
    (as the snapshot files' reader does), NUL bytes and lone surrogates."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        raw = stream.read()
        try:
            text = raw.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
            data = json.loads(
                text,
                parse_constant=json_strict_constant,
                object_pairs_hook=_unique_keys,
                parse_int=bounded_int,
            )
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError among them
            raise ParseError(f"JSON parse error - {exc}") from None
        # only a text with such an escape can decode to a NUL byte or a lone surrogate
        found = find_unstorable(data) if _SUSPECT_ESCAPE.search(raw) else None
        if found is not None:
            raise ValidationError({found[0]: [found[1]]})
        return data


class FormParser(parsers.FormParser):
    """``rest_framework.parsers.FormParser`` that refuses NUL bytes in fields."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        found = find_nul_in_fields(data.lists())
        if found is not None:
            raise _refuse(found)
        return data


class MultiPartParser(parsers.MultiPartParser):
    """``rest_framework.parsers.MultiPartParser`` that refuses NUL bytes in fields and
    file names."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        result = super().parse(stream, media_type, parser_context)
        found = find_nul_in_fields(result.data.lists())
        if found is not None:
            raise _refuse(found)
        for key, files in result.files.lists():
            if NUL in key or any(NUL in (f.name or "") for f in files):
                raise _refuse(shown(key))
        return result
