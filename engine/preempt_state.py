"""The preemption state: the cluster as one preemption request, or a round so far, sees it.

Owns the speed machinery of engine.md section 3 (the reference scheduler copied
every queue snapshot for every node): queue sums, node availability and
per-node victim indexes computed once in one pass over the allocations and
reused by any number of decisions; one working usage shared by a decision with
an undo log instead of copies.  :mod:`engine.preempt` decides with it and
:mod:`engine.rounds` forks and changes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import ScenarioError
from engine.model import Allocation, Ask, Cluster
from engine.queues import Snapshot, snapshot_from_sums, tree_layout
from engine.resources import Resource

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

VictimKey = Callable[[Allocation], "SupportsRichComparison"]
"""A victim ordering (the cross-queue seed's cost function): smaller keys go first."""


@dataclass(slots=True)
class _Scan:
    """What the one pass over the allocations collects (see :func:`_scan`)."""

    own_alloc: list[dict[str, int]]
    own_pre: list[dict[str, int]]
    own_list: list[list[Allocation]]
    leaf: list[list[Allocation]]
    node_lists: dict[str, list[Allocation]]
    node_sum: dict[str, dict[str, int]]
    node_max: dict[str, dict[str, int]]
    node_avail: dict[str, dict[str, int]]


def _scan(cluster: Cluster, index: Mapping[str, int]) -> _Scan:
    """The one O(allocations) pass of a state build, in input order (memory locality).

    Per queue index (*index*): the sums of its own allocations (all, and the
    preempted ones; types in order of first appearance, as ``build_snapshot``
    adds them), its allocations and its possible victims (not preempted, not
    node-bound).  Per node: its possible victims, their sum and per-type
    maximum (kept in per-type columns indexed by node number during the pass:
    list cells are much cheaper than dict entries) and its availability.
    Allocations on unknown nodes (library callers only) load no node.
    """
    n = len(index)
    own_alloc: list[dict[str, int]] = [{} for _ in range(n)]
    own_pre: list[dict[str, int]] = [{} for _ in range(n)]
    own_list: list[list[Allocation]] = [[] for _ in range(n)]
    mixed: set[int] = set()  # queues holding allocations that are never victims
    node_no = {node.id: i for i, node in enumerate(cluster.nodes)}
    trash = len(cluster.nodes)  # the number of every unknown node
    lists: list[list[Allocation]] = [[] for _ in range(trash + 1)]
    # per type: (sum, max) of the possible victims, by node number
    columns: dict[str, tuple[list[int], list[int]]] = {}
    others: dict[int, dict[str, int]] = {}  # per node number: preempted or node-bound load
    index_get = index.get
    node_get = node_no.get
    column_get = columns.get
    for a in cluster.allocations:
        ni = node_get(a.node, trash)
        qi = index_get(a.queue)
        if qi is None:
            qs: dict[str, int] = {}  # unknown queue (library callers only): the node still counts
        else:
            own_list[qi].append(a)
            qs = own_alloc[qi]
        if a.preempted or a.required_node:
            other = others.setdefault(ni, {})
            for t, q in a.resources.items():
                qs[t] = qs.get(t, 0) + q
                other[t] = other.get(t, 0) + q
            if qi is not None:
                mixed.add(qi)
                if a.preempted:
                    pre = own_pre[qi]
                    for t, q in a.resources.items():
                        pre[t] = pre.get(t, 0) + q
            continue  # never a victim, whatever the ask
        lists[ni].append(a)
        for t, q in a.resources.items():
            qs[t] = qs.get(t, 0) + q
            col = column_get(t)
            if col is None:
                col = columns[t] = ([0] * (trash + 1), [0] * (trash + 1))
            sums, maxes = col
            sums[ni] += q
            if q > maxes[ni]:
                maxes[ni] = q
    leaf = [
        [a for a in lst if not (a.preempted or a.required_node)] if i in mixed else lst
        for i, lst in enumerate(own_list)
    ]
    type_columns = list(columns.items())
    node_lists: dict[str, list[Allocation]] = {}
    node_sum: dict[str, dict[str, int]] = {}
    node_max: dict[str, dict[str, int]] = {}
    avail: dict[str, dict[str, int]] = {}
    for node in cluster.nodes:
        i = node_no[node.id]  # the last of duplicate ids, as a dict keyed by id keeps it
        free = dict(node.capacity)
        lst = lists[i]
        if lst:
            node_lists[node.id] = lst
            node_sum[node.id] = total = {t: c[0][i] for t, c in type_columns if c[0][i]}
            node_max[node.id] = {t: c[1][i] for t, c in type_columns if c[1][i]}
            for t, q in total.items():
                free[t] = free.get(t, 0) - q
        load = others.get(i)
        if load:
            # available = capacity - every allocation on the node, preempted ones included
            for t, q in load.items():
                free[t] = free.get(t, 0) - q
        avail[node.id] = free
    return _Scan(own_alloc, own_pre, own_list, leaf, node_lists, node_sum, node_max, avail)


class PreemptionState:
    """The cluster as one preemption request, or a round so far, sees it.

    Built once from a :class:`Cluster` (queue sums, node availability,
    allocations indexed per leaf and per node, per-node upper bounds for
    pruning) and reusable for any number of ``preempt`` calls, which leave it
    unchanged.  A round works on a :meth:`fork` and changes it: victims become
    preempted, placed asks become usage and node load.
    """

    __slots__ = (
        "_global_sorted",
        "_order_uses",
        "_sorted_cache",
        "allocated",
        "candidate_total",
        "leaf_candidates",
        "node_avail",
        "node_candidates",
        "node_capacity",
        "node_ids",
        "node_max",
        "node_schedulable",
        "node_sum",
        "preempted",
        "snap",
        "usage",
    )

    def __init__(self, cluster: Cluster, snap: Snapshot | None = None) -> None:
        if snap is None:
            # one pass over the allocations for the queue sums and the node index together
            layout = tree_layout(cluster.root)
            scan = _scan(cluster, layout.index)
            snap = snapshot_from_sums(cluster, layout, scan.own_alloc, scan.own_pre, scan.own_list)
        else:
            scan = _scan(cluster, snap.index)
        self.snap = snap
        s = snap
        self.allocated: list[dict[str, int]] = [dict(a) for a in s.allocated_by_index]
        self.usage: list[dict[str, int]] = [dict(u) for u in s.usage_by_index]
        self.node_ids: list[str] = sorted(n.id for n in cluster.nodes)
        self.node_capacity: dict[str, Resource] = {n.id: n.capacity for n in cluster.nodes}
        self.node_schedulable: dict[str, bool] = {n.id: n.schedulable for n in cluster.nodes}
        leaf = scan.leaf
        self.node_avail: dict[str, dict[str, int]] = scan.node_avail
        """Per node: capacity minus every allocation on it (may be negative)."""
        self.leaf_candidates: list[list[Allocation]] = leaf
        """Per queue index: allocations that may ever be victims, in input order."""
        self.node_candidates: dict[str, list[Allocation]] = scan.node_lists
        self.node_sum: dict[str, dict[str, int]] = scan.node_sum
        """Per node: sum of its possible victims (an upper bound of what preemption frees)."""
        self.node_max: dict[str, dict[str, int]] = scan.node_max
        """Per node and type: the largest possible victim (positive entries only)."""
        self.preempted: set[str] = set()
        self._sorted_cache: dict[tuple[object, str], list[Allocation]] = {}
        self._order_uses: dict[object, int] = {}
        self._global_sorted: dict[object, list[Allocation]] = {}
        self.candidate_total = sum(len(lst) for lst in leaf)
        """How many allocations may ever be victims (not preempted, not node-bound)."""

    def sorted_candidates(self, order_key: VictimKey) -> list[Allocation] | None:
        """Every possible victim sorted by *order_key*, from this state's second use on.

        ``None`` on the first use: one decision is cheaper without a full sort.
        """
        cached = self._global_sorted.get(order_key)
        if cached is None:
            uses = self._order_uses.get(order_key, 0)
            self._order_uses[order_key] = uses + 1
            if uses == 0:
                return None
            every = [a for lst in self.leaf_candidates for a in lst]
            cached = sorted(every, key=order_key)
            self._global_sorted[order_key] = cached
        return cached

    def fork(self) -> PreemptionState:
        """A copy whose mutable parts (usage, node load, preempted keys) are independent."""
        other = object.__new__(PreemptionState)
        for name in PreemptionState.__slots__:
            setattr(other, name, getattr(self, name))
        other.allocated = [dict(a) for a in self.allocated]
        other.usage = [dict(u) for u in self.usage]
        other.node_avail = {n: dict(a) for n, a in self.node_avail.items()}
        other.preempted = set(self.preempted)
        # caches are keyed by static facts and stay valid; use counts are per state
        other._sorted_cache = dict(self._sorted_cache)
        other._order_uses = dict(self._order_uses)
        other._global_sorted = dict(self._global_sorted)
        return other

    def sorted_on_node(self, node: str, order_key: VictimKey) -> list[Allocation]:
        """The node's possible victims sorted by *order_key* (cached; 3.6 victim list)."""
        key = (order_key, node)
        out = self._sorted_cache.get(key)
        if out is None:
            out = sorted(self.node_candidates.get(node, ()), key=order_key)
            self._sorted_cache[key] = out
        return out

    def queue_index(self, path: str, field: str) -> int:
        """Index of a leaf queue that may hold an ask; ScenarioError otherwise."""
        qi = self.snap.index.get(path)
        if qi is None:
            raise ScenarioError(field, f"unknown queue {path!r}")
        if not self.snap.is_leaf[qi]:
            raise ScenarioError(field, f"{path!r} is a parent queue; only leaf queues hold tasks")
        return qi

    def mark_preempted(self, victims: Iterable[Allocation]) -> None:
        """Victims keep their node but become preempting resources of their queues."""
        index, chain, usage = self.snap.index, self.snap.chain, self.usage
        for v in victims:
            self.preempted.add(v.key)
            for x in chain[index[v.queue]]:
                u = usage[x]
                for t, q in v.resources.items():
                    u[t] = u.get(t, 0) - q

    def place(self, ask: Ask, node: str) -> None:
        """The ask runs on *node*: usage of its queues and load of the node (never a victim)."""
        chain = self.snap.chain[self.snap.index[ask.queue]]
        for x in chain:
            for target in (self.allocated[x], self.usage[x]):
                for t, q in ask.resources.items():
                    target[t] = target.get(t, 0) + q
        na = self.node_avail.setdefault(node, {})
        for t, q in ask.resources.items():
            na[t] = na.get(t, 0) - q


class WorkingUsage:
    """Shared working usage with an undo log (engine.md 2: working copies change A only)."""

    __slots__ = ("chain", "log", "usage")

    def __init__(self, chain: Sequence[Sequence[int]], usage: Sequence[Mapping[str, int]]) -> None:
        self.chain = chain
        self.usage: list[dict[str, int]] = [dict(u) for u in usage]
        self.log: list[tuple[int, Resource, int]] = []

    def apply(self, q: int, r: Resource, sign: int) -> None:
        usage = self.usage
        for x in self.chain[q]:
            u = usage[x]
            for t, v in r.items():
                u[t] = u.get(t, 0) + sign * v
        self.log.append((q, r, sign))

    def undo(self, mark: int) -> None:
        log, usage, chain = self.log, self.usage, self.chain
        while len(log) > mark:
            q, r, sign = log.pop()
            for x in chain[q]:
                u = usage[x]
                for t, v in r.items():
                    u[t] = u.get(t, 0) - sign * v
