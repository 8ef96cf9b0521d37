"""Why the engine answered a what-if for one ask as it did, in words for administrators.

The engine's answer names the fence and, when preemption would not help, a
short reason.  This adds what an administrator needs to act on it, from the
same stored snapshot the run used:

- why the fence is where it is: the queue's own ``preemption.policy`` is
  ``fence``, the queue is at its max, usage plus the ask would exceed the max
  (naming the type and the quantities), or it is the root;
- for a "why not", the resource types, queues and nodes concerned: the type
  that would go over a queue's max, the types no node has room for (naming the
  largest node), the types the ask queue's guarantee cannot hold, and for a
  missing victim the node that comes closest and what it still lacks.

The fence rule is the engine's (engine.md 3.3): walking up from the ask queue,
the first queue that is root, has the ``fence`` policy, is at its max, or would
go over its effective max (the smallest max of it and its ancestors) with the ask.

Beside it, :func:`why_pending` puts the scheduler's own reasons for a pending ask
(``allocationLog``: message, last occurrence, count; ``schedulingAttempted``;
``triggeredScaleUp``) next to the dashboard's reading of the same snapshot (does the
ask fit under the max of every queue on its path, has some node room for it) and
names where the two disagree.  The scheduler's messages are constants of
yunikorn-core (``pkg/common/errors.go``, ``pkg/scheduler/objects/application.go``)
or the text of a node predicate of the shim (affinity, taints, ports), which the
dashboard does not model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from dashboard import display, models
from dashboard.services.engine_state_cache import engine_state
from dashboard.services.explain.path_limits import path_limits
from dashboard.services.explain.reasons import reason_words
from engine import resources as res
from engine.preempt import REASON_GUARANTEE
from engine.queues import POLICY_DISABLED, POLICY_FENCE
from engine.queues import Snapshot as QueueSnapshot

Resource = Mapping[str, int]


def _q(rtype: str, quantity: int | None) -> str:
    return display.format_quantity(rtype, quantity)


def _ask_of(snapshot: models.ClusterSnapshot, request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ask of a what-if request: typed, or a pending ask of the snapshot."""
    typed = request.get("ask")
    if isinstance(typed, Mapping):
        return {
            "key": str(typed.get("key") or "what-if"),
            "queue": str(typed.get("queue") or ""),
            "resources": {str(t): int(q) for t, q in (typed.get("resources") or {}).items()},
            "priority": int(typed.get("priority") or 0),
        }
    key = request.get("ask_key")
    if not key:
        return None
    row = snapshot.asks.filter(key=str(key)).first()
    if row is None:
        return None
    return {
        "key": row.key,
        "queue": row.queue,
        "resources": {str(t): int(q) for t, q in (row.resources or {}).items()},
        "priority": row.priority,
        "pod": row.pod,
    }


def _fence_why(snap: QueueSnapshot, ask_queue: str, ask: Resource) -> tuple[str, str]:
    """(fence path, why it is the fence), by the engine's rule."""
    chain = list(reversed(snap.ancestors(ask_queue, include_self=True)))  # root first
    effective: dict[str, Resource | None] = {}
    acc: Resource | None = None
    for path in chain:
        acc = res.cmin(acc, snap.max(path))
        effective[path] = acc
    for path in reversed(chain):
        info = snap.queue(path)
        allocated = info.allocated
        own_max = info.max
        if info.preemption_policy == POLICY_FENCE:
            return path, f"{path} has preemption.policy fence (a policy fence)"
        if own_max is not None and res.equals(own_max, allocated):
            return path, (
                f"{path} is at its max ({display.format_resource(own_max)}): a queue at its "
                "max fences itself"
            )
        limit = effective[path]
        after = res.add(allocated, ask)
        if res.exceeds_any(limit, after):
            over = [
                t for t in sorted(after) if limit is not None and t in limit and after[t] > limit[t]
            ]
            parts = [
                f"{t}: {_q(t, allocated.get(t, 0))} used + {_q(t, ask.get(t, 0))} asked "
                f"> {_q(t, (limit or {})[t])} max" + _max_origin(snap, chain, path, t)
                for t in over
            ]
            return path, f"usage plus ask would exceed the max of {path} ({'; '.join(parts)})"
        if info.parent is None:
            return path, (
                f"{path} is the root: no queue between the ask queue and the root fences "
                "(none has preemption.policy fence, is at its max, or would go over it with "
                "the ask)"
            )
    return chain[0], "the root"  # pragma: no cover - root ends every chain


def _max_origin(snap: QueueSnapshot, chain: list[str], path: str, rtype: str) -> str:
    """`` (set on root.x)`` when the effective max of *path* in *rtype* comes from an ancestor."""
    own = snap.max(path)
    limit: int | None = None
    origin = path
    for p in chain[: chain.index(path) + 1]:
        m = snap.max(p)
        if m is not None and rtype in m and (limit is None or m[rtype] < limit):
            limit, origin = m[rtype], p
    if own is not None and own.get(rtype) == limit:
        return ""
    return f", the max of {origin}"


def _over_max(snap: QueueSnapshot, ask_queue: str, ask: Resource) -> list[str]:
    out = []
    for path in snap.ancestors(ask_queue, include_self=True):  # nearest first
        m = snap.max(path)
        if m is None:
            continue
        used = snap.queue(path).allocated
        for t, q in sorted(ask.items()):
            if t in m and used.get(t, 0) + q > m[t]:
                out.append(
                    f"{t} in queue {path}: {_q(t, used.get(t, 0))} used + {_q(t, q)} asked "
                    f"> its max {_q(t, m[t])}"
                )
    return out


def _no_node(cluster_nodes: list[Any], ask: Resource) -> list[str]:
    out = []
    for t, q in sorted(ask.items()):
        holding = [n for n in cluster_nodes if n.capacity.get(t, 0) >= q]
        if holding:
            continue
        if not cluster_nodes:
            out.append("there is no node in the snapshot")
            break
        biggest = max(cluster_nodes, key=lambda n: (n.capacity.get(t, 0), n.id))
        out.append(
            f"{t}: the ask needs {_q(t, q)} on one node; the largest, node {biggest.id}, "
            f"has {_q(t, biggest.capacity.get(t, 0))}"
        )
    return out


def _guarantee(snap: QueueSnapshot, ask_queue: str, ask: Resource) -> list[str]:
    info = snap.queue(ask_queue)
    g = info.guaranteed
    if g is None:
        return [reason_words(snap, ask_queue, REASON_GUARANTEE)]
    out = []
    for t, q in sorted(ask.items()):
        if t in g and info.usage.get(t, 0) + q > g[t]:
            out.append(
                f"{t} in queue {ask_queue}: {_q(t, info.usage.get(t, 0))} used + {_q(t, q)} "
                f"asked > its guarantee {_q(t, g[t])}"
            )
    return out


def _closest_node(
    snap: QueueSnapshot,
    nodes: list[Any],
    allocations: list[Any],
    fence: str,
    ask_queue: str,
    ask: Resource,
) -> list[str]:
    """The node closest to holding the ask after taking every candidate inside the fence."""
    if not nodes:
        return []
    used: dict[str, dict[str, int]] = {n.id: {} for n in nodes}
    freeable: dict[str, dict[str, int]] = {n.id: {} for n in nodes}
    counts: dict[str, int] = {n.id: 0 for n in nodes}
    for a in allocations:
        if a.node not in used or a.preempted:
            continue
        used[a.node] = res.add(used[a.node], a.resources)
        inside = a.queue == fence or snap.is_ancestor(fence, a.queue)
        if (
            inside
            and a.queue != ask_queue
            and a.allow_preemption
            and not a.required_node
            and snap.queue(a.queue).preemption_policy != POLICY_DISABLED
        ):
            freeable[a.node] = res.add(freeable[a.node], a.resources)
            counts[a.node] += 1
    best: tuple[int, str, dict[str, int]] | None = None
    for n in nodes:
        free = res.sub(n.capacity, used[n.id])
        room = res.add(free, freeable[n.id])
        short = {t: q - room.get(t, 0) for t, q in ask.items() if room.get(t, 0) < q}
        score = sum(short.values())
        if best is None or (len(short), score, n.id) < (len(best[2]), best[0], best[1]):
            best = (score, n.id, short)
    if best is None:
        return []
    _, node, short = best
    if not short:
        return [
            f"node {node} could hold the ask after preempting candidates inside the fence "
            f"{fence}, but the engine's rules (priority, guarantees, its order) leave too few"
        ]
    lacking = ", ".join(f"{t} {_q(t, q)}" for t, q in sorted(short.items()))
    return [
        f"the closest node, {node}, still lacks {lacking} even after preempting all "
        f"{counts[node]} candidate{'' if counts[node] == 1 else 's'} inside the fence {fence} "
        "on it"
    ]


def explain_ask(run: models.PreemptionRun) -> dict[str, Any] | None:
    """The fence's reason and the detailed "why not" of a finished what-if for one ask."""
    if run.kind != models.PreemptionRun.Kind.WHATIF_PREEMPT or run.snapshot is None:
        return None
    result = run.result if isinstance(run.result, Mapping) else None
    request = run.request if isinstance(run.request, Mapping) else {}
    if result is None:
        return None
    ask = _ask_of(run.snapshot, request)
    state = engine_state(run.snapshot)
    snap = state.queues
    if ask is None or ask["queue"] not in snap:
        return None
    fence, why = _fence_why(snap, ask["queue"], ask["resources"])
    reason = str(result.get("reason") or "")
    details: list[str] = []
    headline = ""
    if result.get("status") == "not_possible":
        nodes = list(state.cluster.nodes)
        over_max = _over_max(snap, ask["queue"], ask["resources"])
        if "max of" in reason:
            details = []
        elif "no node can hold" in reason:
            details = _no_node(nodes, ask["resources"])
        elif "guarantee" in reason:
            details = _guarantee(snap, ask["queue"], ask["resources"])
        elif "preempt other" in reason or "delay" in reason:
            details = [f"the ask's queue is {ask['queue']}"]
        else:
            details = _closest_node(
                snap,
                nodes,
                list(state.cluster.allocations),
                str(result.get("fence") or fence),
                ask["queue"],
                ask["resources"],
            )
        details = over_max + [d for d in details if d not in over_max]
        if over_max and "guarantee" in reason:
            # the binding limit is a max: the scheduler logs "Not enough queue quota"
            headline = f"not enough queue quota: {over_max[0]}"
    # the engine's guarantee rule for a queue without a guarantee of its own, in words
    # true of it (the run's alerts say the same); the rule is quoted only where true
    words = reason_words(snap, ask["queue"], reason)
    if words != reason and not headline:
        headline = words
    details = [d for d in details if d != headline]  # said once
    return {
        "headline": headline,
        "engine_rule": reason if words == reason else "",
        "reason_words": words,
        "ask": ask["key"],
        "pod": ask.get("pod", ""),
        "queue": ask["queue"],
        "resources": display.format_resource(ask["resources"]),
        "fence": fence,
        "fence_agrees": fence == result.get("fence"),
        "fence_why": why,
        "why_not": details,
        "pending": _pending_of(run.snapshot, request),
    }


def _pending_of(
    snapshot: models.ClusterSnapshot, request: Mapping[str, Any]
) -> dict[str, Any] | None:
    """:func:`why_pending` of the what-if's ask when it is a pending ask of the snapshot."""
    key = request.get("ask_key")
    row = snapshot.asks.filter(key=str(key)).first() if key else None
    return why_pending(snapshot, [row])[row.key] if row is not None else None


# ------------------------------------------------------------ why pending


QUEUE_QUOTA = "Not enough queue quota"
USER_QUOTA = "Not enough user quota"
#: The scheduler's constant messages about preemption for the ask.
_PREEMPTION = (
    "Preemption preconditions failed",
    "Preemption queue guarantees check failed",
    "Preemption helped but short of resources",
    "Preemption does not help",
    "No fit on required node, preemption does not help",
    "Preemption max attempts exhausted",
    "Victims picked earlier were released at the final stage",
)

#: What each limit of :mod:`~dashboard.services.explain.path_limits` is, in words.
LIMIT_WORDS = {
    "max_applications": "the queue's max applications",
    "user_applications": "a user or group max applications",
    "placeholder": "its gang placeholder",
    "user_quota": "a user or group max resources",
    "queue_max": "a queue's max",
}

KIND_WORDS = {
    "queue_quota": "queue quota",
    "user_quota": "user or group quota",
    "preemption": "preemption",
    "node": "node",
}


def message_kind(message: str) -> str:
    """What a scheduler log message is about: queue_quota, user_quota, preemption or node.

    >>> message_kind("Not enough queue quota"), message_kind("node(s) had taints")
    ('queue_quota', 'node')
    """
    if message == QUEUE_QUOTA:
        return "queue_quota"
    if message == USER_QUOTA:
        return "user_quota"
    if message in _PREEMPTION:
        return "preemption"
    return "node"


def _free_by_node(nodes: Iterable[Any], allocations: Iterable[Any]) -> dict[str, dict[str, int]]:
    free = {n.id: dict(n.capacity) for n in nodes if n.schedulable}
    for a in allocations:
        room = free.get(a.node)
        if room is not None:
            for t, q in a.resources.items():
                room[t] = room.get(t, 0) - q
    return free


def _node_with_room(free: Mapping[str, Mapping[str, int]], ask: Mapping[str, int]) -> str | None:
    for node_id in sorted(free):
        if all(free[node_id].get(t, 0) >= q for t, q in ask.items()):
            return node_id
    return None


def _log_entries(row: models.PendingAsk) -> list[dict[str, Any]]:
    out = []
    for e in row.scheduler_log or []:
        if not isinstance(e, Mapping):
            continue
        message = str(e.get("message") or "")
        last = e.get("last")
        out.append(
            {
                "message": message,
                "kind": message_kind(message),
                "kind_words": KIND_WORDS[message_kind(message)],
                "count": int(e.get("count") or 0),
                "last": datetime.fromtimestamp(float(last), UTC)
                if isinstance(last, int | float)
                else None,
            }
        )
    return out


def _ask_resources(row: models.PendingAsk) -> dict[str, int]:
    return {str(t): int(q) for t, q in (row.resources or {}).items()}


def why_pending(
    snapshot: models.ClusterSnapshot, asks: Sequence[models.PendingAsk]
) -> dict[str, dict[str, Any]]:
    """Ask key -> the scheduler's reasons, the dashboard's findings and their disagreements.

    Each value: ``scheduler`` (log entries newest first, each with its ``kind``),
    ``attempted``, ``scale_up``, ``dashboard`` (sentences), ``disagreements``
    (sentences; empty when the two agree or neither says anything).
    """
    if not asks:
        return {}
    state = engine_state(snapshot)
    snap = state.queues
    free = _free_by_node(state.cluster.nodes, state.cluster.allocations)
    over_by_key = {
        row.key: _over_max(
            snap, row.queue, {str(t): int(q) for t, q in (row.resources or {}).items()}
        )
        if row.queue in snap
        else []
        for row in asks
    }
    limits = path_limits(snapshot, asks, over_by_key)
    out: dict[str, dict[str, Any]] = {}
    for row in asks:
        res = _ask_resources(row)
        log = _log_entries(row)
        kinds = {e["kind"] for e in log}
        over = over_by_key[row.key]
        on_path = limits[row.key]
        held = on_path.held_by
        cannot_start = held is not None and held.kind in ("max_applications", "user_applications")
        room = _node_with_room(free, res)
        dashboard: list[str] = []
        if held is not None:
            dashboard.append(f"held by {LIMIT_WORDS[held.kind]}: {held.text}")
        dashboard += [o for o in over if held is None or o not in held.text]
        if room is None:
            dashboard += _no_node(list(state.cluster.nodes), res) or [
                "no schedulable node has that much free now"
            ]
        if not dashboard:
            dashboard.append(
                "the ask is within every limit on its path (max applications, user and "
                f"group limits, the max of every queue) and node {room} has room for it"
            )
        disagree: list[str] = []
        if "queue_quota" in kinds and not over:
            disagree.append(
                f"the scheduler reports “{QUEUE_QUOTA}”, but on this snapshot the ask fits "
                "under the max of every queue on its path: usage may have fallen since its "
                "last try, or the limit is one the dashboard does not see"
            )
        # an application that may not start is never tried: its asks log nothing
        if over and "queue_quota" not in kinds and not cannot_start:
            disagree.append(
                "the dashboard finds the ask over a queue's max, but the scheduler has not "
                f"logged “{QUEUE_QUOTA}” for it"
                + ("" if row.scheduling_attempted else " (it has not tried to place it yet)")
            )
        if "node" in kinds and room is not None:
            disagree.append(
                f"on resources alone node {room} has room; the scheduler's node reasons are "
                "predicates the dashboard does not model (affinity, taints, ports, volumes)"
            )
        user_checks = [c for c in on_path.checks if c.kind == "user_quota"]
        if "user_quota" in kinds and not any(c.holds for c in user_checks):
            disagree.append(
                f"the scheduler reports “{USER_QUOTA}”, but "
                + (
                    "on this snapshot the ask fits every user and group limit on its path"
                    if user_checks
                    else "the config in force sets no user or group limit on its path that "
                    "applies to the application's user"
                )
            )
        out[row.key] = {
            "scheduler": log,
            "attempted": row.scheduling_attempted,
            "scale_up": row.triggered_scale_up,
            "dashboard": dashboard,
            "held_by": dashboard[0] if held is not None or over or room is None else "",
            "checks": [
                {"kind": c.kind, "words": LIMIT_WORDS[c.kind], "holds": c.holds, "text": c.text}
                for c in on_path.checks
            ],
            "disagreements": disagree,
        }
    return out
