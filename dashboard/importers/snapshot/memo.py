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

A node object whose bytes changed is split once more: when its ``allocations`` list is
byte for byte one the memo knows on the same node (a node's figures such as
``utilized`` or ``allocated`` change at every poll, its pods far less often), only
the rest of the object is decoded and read - the list written as ``[]`` in its place,
so every check of the rest runs as on the whole object - and the allocations are
taken as they were read (:class:`PartNode`).

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
    list_digest: bytes | None = None
    """The digest of the bytes of its ``allocations`` list, when the parse took it."""


@dataclass(frozen=True, slots=True)
class PartNode:
    """A node object whose bytes are new but whose ``allocations`` list is that of
    *known*: *rest* is the object decoded with that list written as ``[]``."""

    known: KnownNode
    rest: Any


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
    #: the name of the nodes answer among ``files`` (its changed objects are split finer)
    nodes_file: str | None = None
    pending_nodes_file: str | None = None
    #: the node objects of ``known`` by the digest of their allocations list
    lists: dict[bytes, KnownNode] = field(default_factory=dict)
    next_lists: dict[bytes, KnownNode] = field(default_factory=dict)
    #: node objects taken from ``known``, taken but for their figures (``PartNode``),
    #: and decoded anew by the last parse (figures)
    reused: int = 0
    partly: int = 0
    decoded: int = 0

    def forget(self) -> None:
        """Nothing known any more (after a failed or refused parse)."""
        self.files = None
        self.pending_files = set()
        self.known = {}
        self.next_known = {}
        self.nodes_file = self.pending_nodes_file = None
        self.lists = {}
        self.next_lists = {}

    def checked_allocations(self) -> frozenset[int]:
        """The ids of the engine's allocations of the known nodes: read by parses that
        ended well, so their names passed the checks (alive while the memo holds them)."""
        return frozenset(
            id(a) for k in self.known.values() if type(k) is KnownNode for a in k.built
        )

    def finish(self) -> None:
        """The parse ended well: what it read is what the next one may reuse."""
        self.files = frozenset(self.pending_files)
        self.pending_files = set()
        self.known = self.next_known
        self.next_known = {}
        self.nodes_file, self.pending_nodes_file = self.pending_nodes_file, None
        self.lists = self.next_lists
        self.next_lists = {}


def digest(piece: bytes | memoryview | msgspec.Raw) -> bytes:
    """The digest a node object's bytes are known by (SHA-256: the processors' SHA
    instructions hash an answer's hundred megabytes about twice as fast as BLAKE2)."""
    return hashlib.sha256(piece).digest()


@dataclass(slots=True)
class Pieces:
    """A JSON array split into its objects by :func:`split_pieces`."""

    #: each piece: a :class:`KnownNode` (or :class:`KnownApp`) known whole, else None
    items: list[Any]
    #: the digest of every piece
    digests: list[bytes]
    #: the positions of the pieces to decode, and a JSON array of their bytes (a
    #: :class:`PartNode`'s without its allocations list)
    new: list[int]
    joined: bytes
    #: position -> the known node whose allocations list a new piece holds
    partial: dict[int, KnownNode]
    #: position -> the digest of a new node object's allocations list (finer split only)
    list_digests: dict[int, bytes]


_FIELDS = dict[str, msgspec.Raw]


def split_pieces(data: bytes, memo: PollMemo, *, finer: bool = False) -> Pieces | None:
    """*data* as a JSON array of pieces (see :class:`Pieces`); None when *data* is not a
    JSON array. With *finer* (the nodes answer), a new object's ``allocations`` list is
    looked up in the memo's lists.

    The first piece is always decoded whole: the answer's kind is told by it.
    """
    try:
        raws = msgspec.json.decode(data, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return None
    known = memo.known
    lists = memo.lists if finer else {}
    items: list[Any] = []
    digests: list[bytes] = []
    new: list[int] = []
    new_raws: list[bytes | msgspec.Raw] = []
    partial: dict[int, KnownNode] = {}
    list_digests: dict[int, bytes] = {}
    for i, raw in enumerate(raws):
        d = digest(raw)
        digests.append(d)
        hit = known.get(d) if i else None
        items.append(hit)
        if hit is not None:
            continue
        new.append(i)
        piece: bytes | msgspec.Raw = raw
        if finer and i:
            split = _without_allocations(raw, lists)
            if split is not None:
                list_digests[i], node, rest = split
                if node is not None and rest is not None:
                    partial[i], piece = node, rest
        new_raws.append(piece)
    joined = b"[" + b",".join(bytes(r) for r in new_raws) + b"]"
    return Pieces(items, digests, new, joined, partial, list_digests)


def _without_allocations(
    raw: msgspec.Raw, lists: dict[bytes, KnownNode]
) -> tuple[bytes, KnownNode | None, bytes | None] | None:
    """The digest of a node object's ``allocations`` list with its ``nodeID`` (two nodes
    may list alike, both none), the known node of that list, and the object's bytes with
    the list written as ``[]`` (None unless the list's bytes occur once in the object)."""
    try:
        fields = msgspec.json.decode(raw, type=_FIELDS)
    except msgspec.DecodeError:
        return None
    listed, nid = fields.get("allocations"), fields.get("nodeID")
    if listed is None or nid is None:
        return None
    h = hashlib.sha256(nid)
    h.update(b"\x00")
    h.update(listed)
    d = h.digest()
    node = lists.get(d)
    if node is None:
        return d, None, None
    whole, part = bytes(raw), bytes(listed)
    at = whole.find(part)
    if at < 0 or whole.find(part, at + 1) >= 0:
        return d, None, None
    return d, node, whole[:at] + b"[]" + whole[at + len(part) :]
