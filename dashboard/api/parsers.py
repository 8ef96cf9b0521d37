"""Request body parsers: DRF's JSON parser, answering 400 for JSON nested too deeply.

Python's ``json`` raises ``RecursionError`` (not ``ValueError``) for a body such as
10,000 nested ``[``; DRF's parser only turns ``ValueError`` into a 400, so without
this every JSON endpoint would answer such a body with a 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """``rest_framework.parsers.JSONParser`` that refuses over-deep nesting with a 400."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
