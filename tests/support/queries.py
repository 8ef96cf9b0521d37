"""The SQL a block of code sends, on every database connection, and which of it writes.

The security walks assert that a refused request wrote nothing: no INSERT, UPDATE,
DELETE (or any other statement that changes rows or tables) reached the database.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from django.db import connections
from django.test.utils import CaptureQueriesContext

#: Statements that change rows or tables, by their first keyword.
_WRITING = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|REPLACE|MERGE|UPSERT|TRUNCATE|CREATE|ALTER|DROP|COPY|"
    r"GRANT|REVOKE|COMMENT|VACUUM|REINDEX|CLUSTER|LOCK)\b",
    re.IGNORECASE,
)
#: A data-changing statement inside a WITH query (``WITH x AS (...) INSERT INTO ...``).
_WRITING_IN_WITH = re.compile(
    r"\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\S+\s+SET)\b", re.IGNORECASE
)


def is_write(sql: str) -> bool:
    """Whether *sql* changes stored rows or tables.

    >>> is_write('UPDATE "dashboard_alert" SET "acknowledged" = true')
    True
    >>> is_write('SELECT "id" FROM "dashboard_alert" FOR UPDATE')
    False
    """
    if _WRITING.match(sql):
        return True
    return bool(re.match(r"^\s*WITH\b", sql, re.IGNORECASE) and _WRITING_IN_WITH.search(sql))


@contextmanager
def captured_writes() -> Iterator[list[str]]:
    """Capture every statement sent on every connection inside the block; the yielded
    list holds, after the block, the ones that write."""
    writes: list[str] = []
    with ExitStack() as stack:
        captures = [stack.enter_context(CaptureQueriesContext(c)) for c in connections.all()]
        yield writes
    writes.extend(q["sql"] for c in captures for q in c.captured_queries if is_write(q["sql"]))
