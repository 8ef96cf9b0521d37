"""What one poll of a source read, kept for the next: the cost of a poll follows what changed.

A scheduler answers the nodes list in one JSON array, one object per node with the
allocations on it, and the applications in another. :class:`PollMemo` keeps, for
each node object of the last answer read (by a digest of its bytes), what reading it
gave: the scenario's node, the allocations of the common form (their dicts and the
engine's objects), the sums the cross-checks compare; and for each application
object, the object trimmed to what the import reads. The next parse with the same
memo splits both answers into their objects before decoding anything, decodes only
the objects whose bytes are new, and takes the others as they were read, a node
after checking what it depends on in the rest of the answer (each application's
queue still the same leaf, no key seen twice).

Anything it cannot vouch for - a node read the careful way, a changed application
queue, a state dump's shim pods - is read as without a memo; a refusal is always
worded by a parse without it (:func:`dashboard.importers.snapshot.parse_snapshot`).
The memo holds only the last answers' objects, so it grows with the cluster,
not with the number of polls; it lives in the process that polls (a worker), one per
source.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from engine.model import Allocation


class StaleMemo(Exception):
    """A memo's piece no longer fits the answer around it: the parse is made again
    without the memo."""


@dataclass(frozen=True, slots=True)
class KnownNode:
    """One node object of an earlier answer, as reading it gave."""

    node: dict[str, Any]
    reported: dict[str, int]
    allocations: tuple[dict[str, Any], ...]
    built: tuple[Allocation, ...]
    node_sum: dict[str, int]
    apps: tuple[tuple[str, str], ...]
    """(application id, its queue) of each application its allocations belong to."""


@dataclass(frozen=True, slots=True)
class KnownApp:
    """One application object of an earlier applications answer, as trimmed to what is
    read (``applications._drop_unread``); each parse takes a copy (the import empties
    the applications it has read)."""

    trimmed: dict[str, Any]
    gangless: bool

    def copy(self) -> dict[str, Any]:
        app = dict(self.trimmed)
        if type(app.get("allocations")) is list:
            app["allocations"] = list(app["allocations"])
        return app


@dataclass
class PollMemo:
    """The node and application objects of the last answers a source's parse read
    (see the module)."""

    #: the names of the files split into objects: the nodes and applications answers
    files: frozenset[str] | None = None
    #: the same in the parse under way
    pending_files: set[str] = field(default_factory=set)
    known: dict[bytes, KnownNode | KnownApp] = field(default_factory=dict)
    #: filled by the parse under way; becomes ``known`` when it ends well
    next_known: dict[bytes, KnownNode | KnownApp] = field(default_factory=dict)
    #: node objects taken from ``known`` and decoded anew by the last parse (figures)
    reused: int = 0
    decoded: int = 0

    def forget(self) -> None:
        """Nothing known any more (after a failed or refused parse)."""
        self.files = None
        self.pending_files = set()
        self.known = {}
        self.next_known = {}

    def finish(self) -> None:
        """The parse ended well: what it read is what the next one may reuse."""
        self.files = frozenset(self.pending_files)
        self.pending_files = set()
        self.known = self.next_known
        self.next_known = {}


def digest(piece: bytes | memoryview | msgspec.Raw) -> bytes:
    """The digest a node object's bytes are known by."""
    return hashlib.blake2b(piece, digest_size=20).digest()


def split_pieces(
    data: bytes, memo: PollMemo
) -> tuple[list[Any], list[bytes], list[int], bytes] | None:
    """*data* as a JSON array of pieces: each known piece (a :class:`KnownNode`) or None,
    the digest of every piece, the positions of the new ones, and a JSON array of only
    the new ones (to decode at once). None when *data* is not a JSON array.

    The first piece is always new: the answer's kind is told by it.
    """
    try:
        raws = msgspec.json.decode(data, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return None
    known = memo.known
    items: list[Any] = []
    digests: list[bytes] = []
    new: list[int] = []
    new_raws: list[msgspec.Raw] = []
    for i, raw in enumerate(raws):
        d = digest(raw)
        digests.append(d)
        hit = known.get(d) if i else None
        items.append(hit)
        if hit is None:
            new.append(i)
            new_raws.append(raw)
    joined = b"[" + b",".join(bytes(r) for r in new_raws) + b"]"
    return items, digests, new, joined
