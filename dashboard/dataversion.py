"""Data versions: a number per table that changes with every committed write to it.

Kept by the database itself (triggers of migration 0014: inserts, updates, deletes,
bulk or not, from any process, and TRUNCATE on PostgreSQL), so that a read built
only from stored rows can be kept per process, keyed by the versions of the tables
it reads: a write changes the key, and the next read builds the answer again.

Correct because the versions are read first, in their own statement, outside any
transaction: a version already committed means the writes it counts are committed
too, so the rows read next are at least that new (perhaps newer, which only makes the
kept answer fresher than its key). Inside a transaction (``atomic``, or a test run in
one) this connection's own uncommitted writes are not counted yet on PostgreSQL
(the count is set at commit), so :func:`versions` answers ``None`` there and
:func:`cached` builds afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from django.db import connection

from dashboard.pages.memo import Memo

#: The tables with a version (as created by migration 0014).
TABLES = frozenset(
    {
        "dashboard_alert",
        "dashboard_quotachange",
        "dashboard_preemptionrun",
        "dashboard_runvictim",
        "dashboard_partition",
        "dashboard_cluster",
        "auth_user",
    }
)

_V = TypeVar("_V")


def versions(tables: Sequence[str]) -> tuple[int, ...] | None:
    """The current version of each of *tables* (0: never written), in order.

    ``None`` inside a transaction: the caller must not key a kept answer by it.
    """
    unknown = set(tables) - TABLES
    if unknown:
        raise ValueError(f"no data version for {sorted(unknown)}")
    if connection.in_atomic_block:
        return None
    marks = ", ".join(["%s"] * len(tables))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT name, n FROM dashboard_dataversion WHERE name IN ({marks})", list(tables)
        )
        found = {str(name): int(n) for name, n in cursor.fetchall()}
    return tuple(found.get(t, 0) for t in tables)


def cached(memo: Memo[_V], tables: Sequence[str], key: Hashable, build: Callable[[], _V]) -> _V:
    """*build()* kept in *memo* under *key* and the versions of *tables* (everything the
    value depends on besides *key*); built afresh, and not kept, inside a transaction."""
    current = versions(tables)
    if current is None:
        return build()
    return memo.get((key, tuple(tables), current), build)
