"""One evolving cluster for a chain of quota preemptions (the planned firings, in order).

A plan fires many quota preemption timers one after the other; each firing's
victims are gone (``preempted``: they no longer count as usage) for the ones
after it.  Rebuilding the engine's snapshot of a 100,000-allocation cluster for
every firing would cost a quarter second each, so :class:`ChainedCluster`
builds it once and then, per firing, replaces only the queues the victims touch
(their leaves and those leaves' ancestors): the result is the snapshot
:func:`engine.queues.build_snapshot` would give for the cluster with those
allocations marked preempted (``tests/dashboard/test_planning_chain.py`` checks
that equality, and the plan test checks every firing against ``python -m engine``).

Framework-free: nothing here imports Django.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from engine.model import Allocation, Cluster, QueueConfig
from engine.queues import Snapshot, build_snapshot
from engine.resources import Resource


def overlay_limits(
    root: QueueConfig, limits: Mapping[str, tuple[Resource | None, Resource | None, float]]
) -> QueueConfig:
    """*root*'s tree with the guaranteed, max and quota delay of some queues replaced.

    Args:
        root: the snapshot's queue tree.
        limits: queue path -> (guaranteed, max, effective quota preemption delay in
            seconds) as the applied config sets them; other queues keep their values.
            Root keeps its own (YuniKorn forbids resources on root).
    """

    def walk(q: QueueConfig, path: str) -> QueueConfig:
        kids = tuple(walk(c, f"{path}.{c.name}") for c in q.children)
        new = limits.get(path)
        if new is None or path == "root":
            return q if kids == q.children else dataclasses.replace(q, children=kids)
        guaranteed, max_, delay = new
        return dataclasses.replace(
            q,
            guaranteed=None if guaranteed is None else dict(guaranteed),
            max=None if max_ is None else dict(max_),
            quota_preemption_delay=delay,
            children=kids,
        )

    return walk(root, root.name)


class ChainedCluster:
    """A cluster whose allocations are taken away firing after firing.

    ``snapshot`` is always the engine snapshot of ``cluster`` with every victim
    taken so far marked ``preempted``; ``taken`` lists those victims in order.
    """

    __slots__ = ("_alloc", "_base_preempting", "_pre", "_usage", "base", "snapshot", "taken")

    def __init__(self, cluster: Cluster) -> None:
        self.base = cluster
        self.snapshot: Snapshot = build_snapshot(cluster)
        self.taken: list[str] = []
        self._base_preempting = {q.path: dict(q.preempting) for q in self.snapshot}

    def timer_usage(self, path: str, rules: str) -> Resource | None:
        """The usage a quota timer of *path* is decided on now, by the rule set.

        ``scheduler`` (engine.md 5.1): the scheduler's allocated, so the allocations the
        cluster was already preempting still count; the victims of the plan's earlier
        firings do not (the plan takes each firing to complete, its victims released,
        before the next check).  ``seed``: U(Q), as :meth:`usage`.  ``None`` for an
        unknown queue.
        """
        usage = self.usage(path)
        if usage is None or rules != "scheduler":
            return usage
        out = dict(usage)
        for t, q in self._base_preempting.get(path, {}).items():
            out[t] = out.get(t, 0) + q
        return {t: q for t, q in out.items() if q}

    def usage(self, path: str) -> Resource | None:
        """U(Q) now (after the victims taken so far); ``None`` for an unknown queue."""
        if path not in self.snapshot:
            return None
        return dict(self.snapshot.usage(path))

    def take(self, victims_by_leaf: Mapping[str, Iterable[str]]) -> None:
        """Mark these allocations preempted: leaf path -> allocation keys (a plan's ``leaves``)."""
        snap = self.snapshot
        infos = list(snap)
        freed_at: dict[int, dict[str, int]] = {}
        for leaf_path, keys in victims_by_leaf.items():
            wanted = set(keys)
            if not wanted:
                continue
            li = snap.index[leaf_path]
            info = infos[li]
            freed: dict[str, int] = {}
            allocs: list[Allocation] = []
            for a in info.allocations:
                if a.key in wanted and not a.preempted:
                    for t, q in a.resources.items():
                        freed[t] = freed.get(t, 0) + q
                    allocs.append(dataclasses.replace(a, preempted=True))
                    self.taken.append(a.key)
                else:
                    allocs.append(a)
            infos[li] = dataclasses.replace(info, allocations=tuple(allocs))
            for x in snap.chain[li]:
                acc = freed_at.setdefault(x, {})
                for t, q in freed.items():
                    acc[t] = acc.get(t, 0) + q
        for x, freed in freed_at.items():
            info = infos[x]
            pre = dict(info.preempting)
            for t, q in freed.items():
                pre[t] = pre.get(t, 0) + q
            pre = {t: q for t, q in pre.items() if q != 0}
            alloc = info.allocated
            usage = {t: q - pre.get(t, 0) for t, q in alloc.items() if q != pre.get(t, 0)}
            infos[x] = dataclasses.replace(info, preempting=pre, usage=usage)
        self.snapshot = Snapshot(infos)

    def cluster(self) -> Cluster:
        """The cluster as it stands: the victims taken so far marked ``preempted``."""
        gone = set(self.taken)
        if not gone:
            return self.base
        allocations = tuple(
            dataclasses.replace(a, preempted=True) if a.key in gone and not a.preempted else a
            for a in self.base.allocations
        )
        return dataclasses.replace(self.base, allocations=allocations)
