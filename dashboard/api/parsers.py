"""Request body parsers: DRF's, answering 400 for JSON nested too deeply and for NUL bytes.

Python's ``json`` raises ``RecursionError`` (not ``ValueError``) for a body such as
10,000 nested ``[``; DRF's parser only turns ``ValueError`` into a 400, so without
this every JSON endpoint would answer such a body with a 500.

Every parser also refuses a NUL byte in a key or string (PostgreSQL cannot store
one) with a 400 naming the field, see :mod:`dashboard.nulbytes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from dashboard.nulbytes import MESSAGE, NUL, find_nul, find_nul_in_fields, shown


def _refuse(field: str) -> ValidationError:
    return ValidationError({field: [MESSAGE]})


class JSONParser(parsers.JSONParser):
    """``rest_framework.parsers.JSONParser`` that refuses over-deep nesting and NUL bytes."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        found = find_nul(data)
        if found is not None:
            raise _refuse(found)
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
