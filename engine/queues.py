"""Queue tree snapshot: paths, usage, guaranteed/max, effective properties.

Owns engine.md sections 0.1 (snapshot quantities, property inheritance) and 2
(``preemptable`` and ``remaining``), plus the mutable working usage that the
preemption and quota algorithms change and undo instead of copying.

Queues are numbered in full-path string order (scenario-format.md: "queues are
ordered by their full path string"), so a parent always has a smaller index
than its children and index order is path order.  The path-based accessors are
the public face; the index-based ones exist for the hot loops.

>>> from engine.model import Allocation, Cluster, QueueConfig
>>> tree = QueueConfig("root", children=(QueueConfig("a", guaranteed={"vcore": 5}),))
>>> snap = build_snapshot(Cluster(tree, allocations=(
...     Allocation("x", "root.a", "n1", {"vcore": 6}),)))
>>> snap.usage("root.a"), preemptable(snap, "root.a"), remaining(snap, "root.a")
({'vcore': 6}, {'vcore': 1}, {'vcore': -1})
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from engine import resources as res
from engine.durations import parse_go_duration as parse_go_duration
from engine.model import Allocation, Cluster, QueueConfig
from engine.resources import Resource

DEFAULT_PREEMPTION_DELAY = 30.0
"""Seconds an ask waits before it may preempt when ``preemption.delay`` is unusable."""

POLICY_DEFAULT = "default"
POLICY_FENCE = "fence"
POLICY_DISABLED = "disabled"

_INT_RE = re.compile(r"[+-]?[0-9]+")
_BY_KEY = attrgetter("key")
_CAPACITY = attrgetter("capacity")
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def parse_priority_offset(value: str) -> int | None:
    """The integer of a ``priority.offset`` string; ``None`` when it is not an integer.

    >>> parse_priority_offset("+7"), parse_priority_offset("x"), parse_priority_offset(" 1")
    (7, None, None)
    """
    if _INT_RE.fullmatch(value) is None:
        return None
    return int(value)


def _prop(props: Mapping[str, str], key: str) -> str | None:
    # Property keys are matched exactly, as in a YuniKorn queue config.
    value = props.get(key)
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """One queue of a snapshot with its sums and effective properties."""

    index: int
    path: str
    name: str
    parent: str | None
    children: tuple[str, ...]
    """Child paths in name order."""
    depth: int
    is_leaf: bool
    allocated: Resource
    """A(Q): every allocation of the subtree, preempted ones included; no zero entries."""
    preempting: Resource
    """P(Q): the preempted allocations of the subtree; no zero entries."""
    usage: Resource
    """U(Q) = A(Q) - P(Q); no zero entries."""
    guaranteed: Resource | None
    max: Resource | None
    """Configured max; for root the fallback of engine.md 0.1 (sum of node capacities)."""
    preemption_policy: str
    """Effective ``preemption.policy``: default, fence or disabled."""
    priority_fence: bool
    """Own ``priority.policy`` is fence."""
    priority_offset: int
    preemption_delay: float
    """Effective ``preemption.delay`` in seconds (meaningful on leaves)."""
    quota_preemption_delay: float
    """Effective ``quota_preemption_delay`` in seconds."""
    allocations: tuple[Allocation, ...]
    """The queue's own allocations (leaves only), sorted by key."""


class Snapshot:
    """Immutable queue tree of one cluster state (engine.md 0.1 and 2).

    Build it with :func:`build_snapshot`.  Index-based attributes (lists indexed
    by queue number, in path order) serve the hot loops:

    ``paths``, ``parent`` (-1 for root), ``children`` (name order), ``is_leaf``,
    ``chain`` (indices from root down to the queue), ``usage_by_index`` (U),
    ``allocated_by_index`` (A), ``guaranteed_by_index``, ``max_by_index``.
    """

    __slots__ = (
        "_info",
        "allocated_by_index",
        "chain",
        "children",
        "guaranteed_by_index",
        "index",
        "is_leaf",
        "max_by_index",
        "parent",
        "paths",
        "preempting_by_index",
        "usage_by_index",
    )

    def __init__(self, infos: Sequence[QueueInfo]) -> None:
        self._info: tuple[QueueInfo, ...] = tuple(infos)
        self.paths: tuple[str, ...] = tuple(q.path for q in infos)
        self.index: dict[str, int] = {p: i for i, p in enumerate(self.paths)}
        self.parent: tuple[int, ...] = tuple(
            -1 if q.parent is None else self.index[q.parent] for q in infos
        )
        self.children: tuple[tuple[int, ...], ...] = tuple(
            tuple(self.index[c] for c in q.children) for q in infos
        )
        self.is_leaf: tuple[bool, ...] = tuple(q.is_leaf for q in infos)
        chain: list[tuple[int, ...]] = []
        for i, p in enumerate(self.parent):
            # parents precede children in path order, so chain[p] is ready
            chain.append((i,) if p < 0 else (*chain[p], i))
        self.chain: tuple[tuple[int, ...], ...] = tuple(chain)
        self.usage_by_index: tuple[Resource, ...] = tuple(q.usage for q in infos)
        self.allocated_by_index: tuple[Resource, ...] = tuple(q.allocated for q in infos)
        self.preempting_by_index: tuple[Resource, ...] = tuple(q.preempting for q in infos)
        self.guaranteed_by_index: tuple[Resource | None, ...] = tuple(q.guaranteed for q in infos)
        self.max_by_index: tuple[Resource | None, ...] = tuple(q.max for q in infos)

    # -- path-based accessors -------------------------------------------------

    def __contains__(self, path: object) -> bool:
        return path in self.index

    def __iter__(self) -> Iterator[QueueInfo]:
        """Every queue, in path order."""
        return iter(self._info)

    def __len__(self) -> int:
        return len(self._info)

    @property
    def root(self) -> QueueInfo:
        return self._info[0]

    def queue(self, path: str) -> QueueInfo:
        """The queue at *path*; ``KeyError`` if there is none."""
        return self._info[self.index[path]]

    def info(self, index: int) -> QueueInfo:
        return self._info[index]

    def usage(self, path: str) -> Resource:
        """U(Q)."""
        return self.queue(path).usage

    def allocated(self, path: str) -> Resource:
        """A(Q)."""
        return self.queue(path).allocated

    def preempting(self, path: str) -> Resource:
        """P(Q)."""
        return self.queue(path).preempting

    def guaranteed(self, path: str) -> Resource | None:
        """G(Q), ``None`` when not set."""
        return self.queue(path).guaranteed

    def max(self, path: str) -> Resource | None:
        """M(Q), ``None`` when not set (root: the node-capacity fallback)."""
        return self.queue(path).max

    def ancestors(self, path: str, *, include_self: bool = False) -> list[str]:
        """Ancestor paths, nearest first, ending with root."""
        chain = self.chain[self.index[path]]
        ids = chain if include_self else chain[:-1]
        return [self.paths[i] for i in reversed(ids)]

    def is_ancestor(self, ancestor: str, path: str) -> bool:
        """True when *ancestor* is a proper ancestor of *path* (real ancestry, not a prefix)."""
        a = self.index[ancestor]
        chain = self.chain[self.index[path]]
        return a in chain[:-1]

    def subtree(self, path: str) -> list[str]:
        """*path* and every queue below it, in path order."""
        start = self.index[path]
        out = [i for i in range(start, len(self.paths)) if start in self.chain[i]]
        return [self.paths[i] for i in out]

    def leaves_under(self, path: str) -> list[str]:
        """The leaves of *path*'s subtree (itself if a leaf), in path order."""
        return [p for p in self.subtree(path) if self.is_leaf[self.index[p]]]

    def working(self) -> WorkingUsage:
        """A fresh mutable working usage over this snapshot."""
        return WorkingUsage(self)


def _sum_into(target: dict[str, int], r: Resource) -> None:
    for t, q in r.items():
        target[t] = target.get(t, 0) + q


@dataclass(frozen=True, slots=True)
class TreeLayout:
    """The queue tree flattened in path order: the frame a snapshot's sums are built in.

    ``entries[i]`` is ``(path, name, config, parent path, depth)`` of queue *i*.
    """

    entries: tuple[tuple[str, str, QueueConfig, str | None, int], ...]
    index: dict[str, int]
    parent: tuple[int, ...]
    """Parent index per queue, -1 for root; a parent precedes its children."""


def tree_layout(root: QueueConfig) -> TreeLayout:
    """Number the queues of *root*'s tree in full-path string order."""
    flat: list[tuple[str, str, QueueConfig, str | None, int]] = []
    stack: list[tuple[QueueConfig, str | None, int]] = [(root, None, 0)]
    while stack:  # iterative: absurdly deep trees must not hit the recursion limit
        cfg, parent_path, depth = stack.pop()
        path = cfg.name if parent_path is None else f"{parent_path}.{cfg.name}"
        flat.append((path, cfg.name, cfg, parent_path, depth))
        for child in cfg.children:
            stack.append((child, path, depth + 1))
    flat.sort(key=lambda e: e[0])
    index = {e[0]: i for i, e in enumerate(flat)}
    parent = tuple(-1 if e[3] is None else index[e[3]] for e in flat)
    return TreeLayout(tuple(flat), index, parent)


def build_snapshot(cluster: Cluster) -> Snapshot:
    """Compute the queue snapshot of *cluster* (engine.md 0.1).

    Allocations in unknown queues are ignored here; ``engine.scenario`` rejects
    them (and allocations in parent queues) before a snapshot is built.
    """
    layout = tree_layout(cluster.root)
    n = len(layout.entries)
    own_alloc: list[dict[str, int]] = [{} for _ in range(n)]
    own_pre: list[dict[str, int]] = [{} for _ in range(n)]
    own_list: list[list[Allocation]] = [[] for _ in range(n)]
    index_get = layout.index.get
    for a in cluster.allocations:  # the one O(allocations) pass: kept lean
        qi = index_get(a.queue)
        if qi is None:
            continue
        acc = own_alloc[qi]
        for t, q in a.resources.items():
            acc[t] = acc.get(t, 0) + q
        if a.preempted:
            _sum_into(own_pre[qi], a.resources)
        own_list[qi].append(a)
    return snapshot_from_sums(cluster, layout, own_alloc, own_pre, own_list)


def snapshot_from_sums(
    cluster: Cluster,
    layout: TreeLayout,
    own_alloc: list[dict[str, int]],
    own_pre: list[dict[str, int]],
    own_list: Sequence[Sequence[Allocation]],
) -> Snapshot:
    """The snapshot from each queue's own sums, in input order of its allocations.

    ``own_alloc[i]`` / ``own_pre[i]``: sums of all / the preempted allocations of
    queue *i* itself, types in order of first appearance (they are folded into
    the ancestors here, in place); ``own_list[i]``: its allocations.  For callers
    that already make a pass over the allocations (``PreemptionState``) and
    would otherwise pay for a second one in :func:`build_snapshot`.
    """
    flat, parent = layout.entries, layout.parent
    n = len(flat)
    # children have larger indices than parents: fold sums bottom-up in reverse order
    for i in range(n - 1, 0, -1):
        p = parent[i]
        _sum_into(own_alloc[p], own_alloc[i])
        _sum_into(own_pre[p], own_pre[i])

    root_max: Resource | None = cluster.root.max or None
    if root_max is None and cluster.nodes:
        root_max = res.total_of(list(map(_CAPACITY, cluster.nodes)))

    policy: list[str] = []
    delay_src: list[str | None] = []
    qdelay: list[float] = []
    infos: list[QueueInfo] = []
    for i, (path, name, cfg, parent_path, depth) in enumerate(flat):
        p = parent[i]
        props = cfg.properties
        own_policy = _prop(props, "preemption.policy")
        if own_policy is not None:
            pol = own_policy.lower()
            if pol not in (POLICY_FENCE, POLICY_DISABLED):
                pol = POLICY_DEFAULT  # unknown value = default
        elif p >= 0 and policy[p] == POLICY_DISABLED:
            pol = POLICY_DISABLED  # disabled is inherited; fence never is
        else:
            pol = POLICY_DEFAULT
        policy.append(pol)
        own_delay = _prop(props, "preemption.delay")
        delay_src.append(own_delay if own_delay is not None else (delay_src[p] if p >= 0 else None))
        src = delay_src[i]
        seconds = None if src is None else parse_go_duration(src)
        delay = DEFAULT_PREEMPTION_DELAY if seconds is None or seconds <= 0 else seconds
        if cfg.quota_preemption_delay is not None:
            qd = float(cfg.quota_preemption_delay)
        else:
            qd = qdelay[p] if p >= 0 else 0.0
        qdelay.append(qd)
        prio_policy = _prop(props, "priority.policy")
        offset_text = _prop(props, "priority.offset")
        offset = 0 if offset_text is None else (parse_priority_offset(offset_text) or 0)
        if not INT32_MIN <= offset <= INT32_MAX:
            offset = 0  # Go's ParseInt(v, 10, 32) fails: unparsable = 0
        alloc = {t: q for t, q in own_alloc[i].items() if q != 0}
        pre = {t: q for t, q in own_pre[i].items() if q != 0}
        usage = {t: q - pre.get(t, 0) for t, q in alloc.items() if q != pre.get(t, 0)}
        children = tuple(sorted(f"{path}.{c.name}" for c in cfg.children))
        # children sorted by path equals sorted by name: they share the prefix "path."
        infos.append(
            QueueInfo(
                index=i,
                path=path,
                name=name,
                parent=parent_path,
                children=children,
                depth=depth,
                is_leaf=not cfg.children,
                allocated=alloc,
                preempting=pre,
                usage=usage,
                guaranteed=cfg.guaranteed or None,
                max=root_max if p < 0 else (cfg.max or None),
                preemption_policy=pol,
                priority_fence=prio_policy is not None and prio_policy.lower() == POLICY_FENCE,
                priority_offset=offset,
                preemption_delay=delay,
                quota_preemption_delay=qd,
                allocations=tuple(sorted(own_list[i], key=_BY_KEY)) if own_list[i] else (),
            )
        )
    return Snapshot(infos)


# -- resource functions of engine.md section 2 ---------------------------------


def preemptable_at(snap: Snapshot, usage: Sequence[Resource], q: int) -> dict[str, int] | None:
    """``preemptable(Q)`` (engine.md 2.1) for queue index *q* over a usage vector.

    ``usage[i]`` is U of queue *i*; "A(Q) is empty" is read as "U and P both empty".
    """
    result: dict[str, int] | None = None
    for x in snap.chain[q]:
        u = usage[x]
        if not _has_value(u) and not snap.preempting_by_index[x]:
            result = None  # A(Q) empty: nothing to preempt at this level
            continue
        g = snap.guaranteed_by_index[x] or {}
        own = {t: v - g.get(t, 0) for t, v in u.items() if v - g.get(t, 0) > 0}
        result = {} if not own else res.cmin_existing(own, result)
    return result


def _has_value(r: Resource) -> bool:
    return any(v != 0 for v in r.values())


def remaining_at(
    snap: Snapshot, usage: Sequence[Resource], q: int, ctx: int = -1
) -> dict[str, int] | None:
    """``remaining(Q, ctx)`` (engine.md 2.2) for queue index *q*; ``ctx`` -1 = no ask.

    Computed top-down along the chain so deep trees need no recursion.
    """
    guaranteed = snap.guaranteed_by_index
    ctx_has_g = ctx >= 0 and guaranteed[ctx] is not None
    ctx_chain = snap.chain[ctx] if ctx >= 0 else ()
    pr: dict[str, int] | None = None
    for x in snap.chain[q]:
        g = guaranteed[x]
        if g is None and not pr:
            pr = None
            continue
        rg: dict[str, int] | None = None
        if g is not None:
            u = usage[x]
            rg = {t: v - u.get(t, 0) for t, v in g.items()}
        if ctx >= 0 and x != 0:
            if x == ctx and g is not None:
                pr = res.merge_missing(rg, pr)
                continue
            # the ask queue's own guarantee beats its guaranteed ancestors'
            if g is not None and ctx_has_g and x != ctx and x in ctx_chain:
                pr = None
                continue
        pr = res.cmin(rg, pr)
    return pr


def preemptable(snap: Snapshot, path: str) -> dict[str, int] | None:
    """GetPreemptableResource of the queue at *path* (engine.md 2.1).

    ``None`` when the queue has no allocations; ``{}`` when it is within its guarantee.
    """
    return preemptable_at(snap, snap.usage_by_index, snap.index[path])


def remaining(snap: Snapshot, path: str, ctx: str | None = None) -> dict[str, int] | None:
    """GetRemainingGuaranteedResource of *path* (engine.md 2.2); *ctx* is the ask queue."""
    return remaining_at(
        snap, snap.usage_by_index, snap.index[path], -1 if ctx is None else snap.index[ctx]
    )


# -- mutable working usage -----------------------------------------------------


class WorkingUsage:
    """Mutable U per queue over a snapshot, with undo instead of copies.

    ``add``/``remove`` apply a resource to a queue and all its ancestors
    (engine.md 2: "working copies change A only"; P is fixed, so U moves with A).
    ``mark()`` returns a position; ``undo(mark)`` reverts every change made after it.
    Values may hold zero entries after a removal; readers use ``get(t, 0)``.
    """

    __slots__ = ("_log", "snap", "usage")

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.usage: list[dict[str, int]] = [dict(u) for u in snap.usage_by_index]
        self._log: list[tuple[int, Resource, int]] = []

    def _apply(self, q: int, r: Resource, sign: int) -> None:
        usage = self.usage
        for x in self.snap.chain[q]:
            u = usage[x]
            for t, v in r.items():
                u[t] = u.get(t, 0) + sign * v

    def add(self, q: int | str, r: Resource) -> None:
        """Add *r* to queue *q* (index or path) and its ancestors."""
        qi = self.snap.index[q] if isinstance(q, str) else q
        self._apply(qi, r, 1)
        self._log.append((qi, r, 1))

    def remove(self, q: int | str, r: Resource) -> None:
        """Remove *r* from queue *q* (index or path) and its ancestors."""
        qi = self.snap.index[q] if isinstance(q, str) else q
        self._apply(qi, r, -1)
        self._log.append((qi, r, -1))

    def mark(self) -> int:
        return len(self._log)

    def undo(self, mark: int = 0) -> None:
        """Revert every change made since *mark* (default: since creation)."""
        log = self._log
        while len(log) > mark:
            qi, r, sign = log.pop()
            self._apply(qi, r, -sign)

    def usage_of(self, q: int | str) -> dict[str, int]:
        """Working U of *q* with zero entries dropped (a fresh dict)."""
        qi = self.snap.index[q] if isinstance(q, str) else q
        return {t: v for t, v in self.usage[qi].items() if v != 0}

    def remaining(self, q: int | str, ctx: int | str | None = None) -> dict[str, int] | None:
        """``remaining`` of engine.md 2.2 over the working usage."""
        qi = self.snap.index[q] if isinstance(q, str) else q
        ci = -1 if ctx is None else (self.snap.index[ctx] if isinstance(ctx, str) else ctx)
        return remaining_at(self.snap, self.usage, qi, ci)

    def preemptable(self, q: int | str) -> dict[str, int] | None:
        """``preemptable`` of engine.md 2.1 over the working usage."""
        qi = self.snap.index[q] if isinstance(q, str) else q
        return preemptable_at(self.snap, self.usage, qi)


# -- the `resources` request ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourcesAnswer:
    """Answer of the ``resources`` request: the seed's two functions for one queue."""

    preemptable: Resource | None
    remaining_guaranteed: Resource | None

    def to_dict(self) -> dict[str, object]:
        """The contract's JSON object (``null`` stands for nil)."""
        return {
            "preemptable": None if self.preemptable is None else dict(self.preemptable),
            "remaining_guaranteed": (
                None if self.remaining_guaranteed is None else dict(self.remaining_guaranteed)
            ),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ResourcesAnswer:
        """Inverse of :meth:`to_dict` (extra keys ignored)."""
        return cls(
            preemptable=_resource_or_none(data.get("preemptable")),
            remaining_guaranteed=_resource_or_none(data.get("remaining_guaranteed")),
        )


def _resource_or_none(value: object) -> dict[str, int] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError("a resource must be an object or null")
    return {str(t): int(q) for t, q in value.items()}


def queue_resources(snap: Snapshot | Cluster, queue: str) -> ResourcesAnswer:
    """The ``resources`` request: ``preemptable`` and ``remaining`` without an ask.

    The "no ask" columns of engine.md 2.3.
    """
    s = snap if isinstance(snap, Snapshot) else build_snapshot(snap)
    return ResourcesAnswer(preemptable(s, queue), remaining(s, queue))
