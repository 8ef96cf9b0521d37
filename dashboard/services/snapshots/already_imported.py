"""Recognising answers a snapshot was already imported from, without parsing them.

Importing a big cluster's answers takes seconds (decode, validate, store); finding
that they are byte for byte the answers the partition's newest snapshot was made
from takes one hash of the files. The command line and the import page store the hash
of what they read (the files and the options naming where they go) at the end of the
snapshot's ``source_detail``; an import of the same files with the same options then stores
nothing and answers that snapshot, as the poller does for an unchanged cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from dashboard import models
from dashboard.services.scope.latest import latest_snapshot

_CHUNK = 1 << 22


def _options_hash(options: Iterable[str | None]) -> hashlib._Hash:
    h = hashlib.sha256()
    for value in options:
        h.update(b"\x00" if value is None else b"\x01" + value.encode() + b"\x00")
    return h


def answers_digest_of(files: Mapping[str, bytes], *options: str | None) -> str:
    """:func:`answers_digest` of files held in memory (an upload), by name: the same
    files with the same options digest alike whether read from disk or uploaded."""
    h = _options_hash(options)
    for name in sorted(files):
        data = files[name]
        h.update(f"\x02{name}\x00{len(data)}\x00".encode())
        h.update(data)
    return h.hexdigest()


def answers_digest(paths: Iterable[Path], *options: str | None) -> str:
    """SHA-256 of the files (names, sizes and bytes, in name order) and *options*."""
    h = _options_hash(options)
    for path in sorted(paths, key=lambda p: p.name):
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            h.update(f"\x02{path.name}\x00{size}\x00".encode())
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def answers_mark(digest: str) -> str:
    """The end of a snapshot's ``source_detail`` naming the answers it was made from."""
    return f" [answers sha256:{digest}]"


def with_answers_mark(detail: str, digest: str, limit: int = 500) -> str:
    """*detail* (cut to fit *limit* characters) followed by the answers' mark."""
    mark = answers_mark(digest)
    return detail[: limit - len(mark)] + mark


def snapshot_of_answers(digest: str) -> models.ClusterSnapshot | None:
    """The snapshot made from the answers of *digest*, when it is its partition's newest."""
    found = (
        models.ClusterSnapshot.objects.filter(source_detail__endswith=answers_mark(digest))
        .defer("scenario")
        .select_related("partition")
        .order_by("-id")
        .first()
    )
    if found is None:
        return None
    newest = latest_snapshot(found.partition, defer_state=True)
    return found if newest is not None and newest.pk == found.pk else None
