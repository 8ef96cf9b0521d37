"""Errors the engine raises for bad input."""

from __future__ import annotations


class ScenarioError(ValueError):
    """Bad scenario input: names the offending field (a dotted path) and says what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
