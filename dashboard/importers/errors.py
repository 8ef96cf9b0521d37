"""The one exception every importer raises for bad input.

An :class:`ImportFailure` names *where* the problem is (a line of a YAML file,
or a file name and a JSON key path) and *what* is wrong, so the platform can
show one clear line to an administrator and store nothing.

>>> str(ImportFailure("field x not found", "line 14"))
'line 14: field x not found'
>>> str(ImportFailure("unknown node 'n9'", "partition_nodes.json: [3].allocations[0].nodeId"))
"partition_nodes.json: [3].allocations[0].nodeId: unknown node 'n9'"
"""

from __future__ import annotations


class ImportFailure(Exception):
    """Bad input for an importer: ``location`` (may be empty) and ``message``."""

    def __init__(self, message: str, location: str = "") -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.message = message
        self.location = location


def line_location(line: int | None) -> str:
    """``"line N"`` for a 1-based line number, ``""`` when unknown."""
    return f"line {line}" if line is not None else ""
