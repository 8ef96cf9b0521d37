"""Victim explanation: who would be preempted in a queue, in which order, and why not others.

For the dashboard's "victim explanation" page.  For any queue (a leaf, or a
parent standing for all its leaves) it lists:

- the *candidates*: the allocations quota-decrease preemption would consider,
  leaf by leaf in path order and, inside a leaf, in the order it would take
  them (engine.md 4.3), each with the reasons for its place and the rule that
  puts it after the one before it;
- the *exclusions*, each with its reasons: bound to its node
  (``required_node``), already preempted, under a guarantee floor (taking it
  would bring its leaf or an ancestor below guaranteed in a type it uses,
  engine.md 4.4), no type of the given target; and, for inter-queue
  preemption only, an effective ``preemption.policy`` of ``disabled`` or, for a
  given ask queue, a place outside that ask's fence.  An allocation excluded
  only for inter-queue reasons is still a quota candidate.

For a ``preempt`` or ``round`` answer, :func:`explain_needed_victims` says why
each inter-queue victim is released: what it frees on the chosen node and under
which queue's max (engine.md 3.10, 3.11), measured by the trimming's own
bookkeeping (:func:`engine.preempt_trim.victim_needs`).

The order and the floor are ``engine.quota_rules``' own (:func:`quota_victim_key`,
:class:`GuaranteeFloor`): one implementation for the plan and its explanation.
The floor is judged on the current usage; since taking victims only lowers
usage, an allocation blocked now stays blocked during any plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine import resources as res
from engine.answers import PreemptAnswer, RoundAnswer
from engine.errors import ScenarioError
from engine.model import Allocation, Ask, Cluster
from engine.preempt_state import PreemptionState
from engine.preempt_trim import VictimNeed, victim_needs
from engine.queues import POLICY_DISABLED, POLICY_FENCE, Snapshot, build_snapshot
from engine.quota_rules import GuaranteeFloor, OrderKey, format_resource, quota_victim_key
from engine.resources import Resource

ReasonScope = Literal["quota", "inter_queue"]

ORDER_RULES: tuple[str, ...] = (
    "non-originators before originators",
    "lower priority first",
    "opted-in (allow_preemption) before opted-out",
    "younger (later created) first",
    "allocation key",
)
"""The seed's preference rules, in the order of :func:`engine.quota_rules.quota_victim_key`."""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why an allocation is excluded; *scope* says from which kind of preemption."""

    code: str
    """``required_node``, ``preempted``, ``guarantee_floor``, ``no_target_type``,
    ``preemption_disabled``, ``outside_fence`` or ``ask_queue``."""
    text: str
    scope: ReasonScope

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "text": self.text, "scope": self.scope}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A quota-preemption candidate at its place in its leaf's order."""

    key: str
    queue: str
    rank: int
    """1-based position in its leaf's order."""
    resources: Mapping[str, int]
    originator: bool
    priority: int
    allow_preemption: bool
    created: float
    reasons: tuple[str, ...]
    """One sentence per ordering rule, saying where this allocation stands."""
    after: str | None
    """The rule that puts it after the previous candidate of its leaf (None for the first,
    or when a custom order key is used)."""
    inter_queue_excluded: bool
    """Also listed in the exclusions, for inter-queue reasons only."""

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "queue": self.queue,
            "rank": self.rank,
            "resources": dict(self.resources),
            "originator": self.originator,
            "priority": self.priority,
            "allow_preemption": self.allow_preemption,
            "created": self.created,
            "reasons": list(self.reasons),
            "after": self.after,
            "inter_queue_excluded": self.inter_queue_excluded,
        }


@dataclass(frozen=True, slots=True)
class Exclusion:
    """An allocation some preemption will not take, with every reason."""

    key: str
    queue: str
    resources: Mapping[str, int]
    reasons: tuple[Reason, ...]

    @property
    def quota_excluded(self) -> bool:
        """True when quota-decrease preemption will not take it."""
        return any(r.scope == "quota" for r in self.reasons)

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "queue": self.queue,
            "resources": dict(self.resources),
            "quota_excluded": self.quota_excluded,
            "reasons": [r.to_dict() for r in self.reasons],
        }


@dataclass(frozen=True, slots=True)
class VictimExplanation:
    """The explanation of one queue's victims (see the module docstring)."""

    queue: str
    target: Mapping[str, int] | None
    leaves: tuple[str, ...]
    """The leaves explained, in path order (the queue itself when it is a leaf)."""
    candidates: tuple[Candidate, ...]
    """Leaf by leaf in path order, each leaf in the quota order (engine.md 4.3)."""
    exclusions: tuple[Exclusion, ...]
    """Leaf by leaf in path order, then by allocation key."""
    order_rules: tuple[str, ...] = ORDER_RULES
    omitted: Mapping[str, int] = field(default_factory=dict)
    """Per leaf, how many candidates beyond the requested ``limit`` are not listed."""

    def to_dict(self) -> dict[str, object]:
        return {
            "queue": self.queue,
            "target": None if self.target is None else dict(self.target),
            "leaves": list(self.leaves),
            "order_rules": list(self.order_rules),
            "candidates": [c.to_dict() for c in self.candidates],
            "exclusions": [e.to_dict() for e in self.exclusions],
            "omitted": dict(self.omitted),
        }


# -- reasons ------------------------------------------------------------------------


def _plain_number(value: float) -> str:
    """Exact: ``:g`` would print an epoch time as 1.78826e+09."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _plain_seconds(value: float) -> str:
    return f"{_plain_number(value)}s"


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How the reason texts show numbers.

    The default prints them as the scenario carries them (resources in engine
    units, times as epoch seconds); a caller with a reader in mind (the dashboard)
    passes human formats.

    >>> TextFormat().instant(1788256800.0), TextFormat().duration(90.5)
    ('1788256800', '90.5s')
    """

    resource: Callable[[Resource | None], str] = format_resource
    instant: Callable[[float], str] = _plain_number
    """An epoch time (``created``)."""
    duration: Callable[[float], str] = _plain_seconds
    """A length of time in seconds (an allocation's age)."""


PLAIN = TextFormat()


def _place_reasons(a: Allocation, now: float | None, fmt: TextFormat) -> tuple[str, ...]:
    age = "" if now is None else f", {fmt.duration(max(0.0, now - a.created))} old"
    return (
        "originator: taken only after every non-originator of its leaf"
        if a.originator
        else "not an originator: taken before originators",
        f"priority {a.priority}: lower priorities are taken first",
        "opted out (allow_preemption false): taken after opted-in tasks"
        if not a.allow_preemption
        else "opted in: taken before opted-out tasks",
        f"created at {fmt.instant(a.created)}{age}: younger tasks are taken first",
    )


def _after_rule(prev: Allocation, cur: Allocation) -> str:
    """The first rule of the seed's order that separates *prev* from *cur*."""
    pk = quota_victim_key(prev)
    ck = quota_victim_key(cur)
    for rule, p, c in zip(ORDER_RULES, pk, ck, strict=True):
        if p != c:
            return rule
    return ORDER_RULES[-1]


def _fence_of(snap: Snapshot, ask_queue: str) -> str:
    """The fence of asks from *ask_queue* that the snapshot alone decides (engine.md 3.3).

    Root, an own ``preemption.policy`` of ``fence``, or the seed rule (a max equal
    to the queue's allocated resources).  The projected rule needs the ask's
    resources and is not applied here.
    """
    for path in snap.ancestors(ask_queue, include_self=True):
        info = snap.queue(path)
        if info.parent is None or info.preemption_policy == POLICY_FENCE:
            return path
        if info.max is not None and res.equals(info.max, info.allocated):
            return path
    return snap.root.path  # pragma: no cover - the loop always ends at root


def _inter_queue_reasons(
    snap: Snapshot, leaf: str, fence: str | None, ask_queue: str | None
) -> list[Reason]:
    out: list[Reason] = []
    if snap.queue(leaf).preemption_policy == POLICY_DISABLED:
        out.append(
            Reason(
                "preemption_disabled",
                f"the effective preemption.policy of {leaf} is disabled: inter-queue "
                "preemption never takes it (quota preemption ignores the policy)",
                "inter_queue",
            )
        )
    if ask_queue is not None and leaf == ask_queue:
        out.append(
            Reason(
                "ask_queue",
                f"it runs in the ask queue {ask_queue}: an ask never preempts its own queue",
                "inter_queue",
            )
        )
    elif fence is not None and leaf != fence and not snap.is_ancestor(fence, leaf):
        out.append(
            Reason(
                "outside_fence",
                f"it sits outside {fence}, the fence of asks from {ask_queue}: "
                "inter-queue preemption for those asks only looks below the fence",
                "inter_queue",
            )
        )
    return out


# -- the explanation ----------------------------------------------------------------


def explain_victims(
    cluster: Cluster,
    queue_path: str,
    target: Resource | None = None,
    *,
    now: float | None = None,
    ask_queue: str | None = None,
    limit: int | None = None,
    order_key: OrderKey = quota_victim_key,
    snapshot: Snapshot | None = None,
    text: TextFormat = PLAIN,
) -> VictimExplanation:
    """Explain the current victim candidates of *queue_path* and the exclusions.

    Args:
        cluster: the cluster state.
        queue_path: a leaf, or a parent standing for every leaf below it.
        target: when given, only allocations using one of its types are
            candidates (as in engine.md 4.3); the others are excluded.
        now: when given, candidates' reasons include their age.
        ask_queue: when given, inter-queue exclusions also say which allocations
            lie outside the fence of asks from this queue.
        limit: when given, at most this many candidates per leaf are described
            (the first in the order); ``omitted`` counts the others.
        order_key: the victim cost function (default: the seed's order).
        snapshot: a snapshot of *cluster* already built by the caller.
        text: how reasons show resources, times and ages (default: raw numbers).

    Raises:
        ScenarioError: an unknown queue.
    """
    snap = build_snapshot(cluster) if snapshot is None else snapshot
    if queue_path not in snap:
        raise ScenarioError("queue", f"unknown queue {queue_path!r}")
    if ask_queue is not None and ask_queue not in snap:
        raise ScenarioError("ask_queue", f"unknown queue {ask_queue!r}")
    want = {t for t, q in target.items() if q > 0} if target else None
    fence = None if ask_queue is None else _fence_of(snap, ask_queue)
    default_order = order_key is quota_victim_key

    leaves = snap.leaves_under(queue_path)
    candidates: list[Candidate] = []
    exclusions: list[Exclusion] = []
    omitted: dict[str, int] = {}
    usage = snap.usage_by_index
    for leaf in leaves:
        li = snap.index[leaf]
        floor = GuaranteeFloor(snap, usage, li)
        inter = _inter_queue_reasons(snap, leaf, fence, ask_queue)
        kept: list[Allocation] = []
        for a in snap.queue(leaf).allocations:  # key order
            reasons: list[Reason] = []
            if a.required_node:
                reasons.append(
                    Reason(
                        "required_node",
                        f"bound to node {a.node} (required_node, daemon-set style): "
                        "never a quota victim",
                        "quota",
                    )
                )
            if a.preempted:
                reasons.append(
                    Reason(
                        "preempted",
                        "already preempted and shutting down: never chosen again",
                        "quota",
                    )
                )
            if want is not None and want.isdisjoint(a.resources):
                reasons.append(
                    Reason(
                        "no_target_type",
                        f"uses none of the target's types ({', '.join(sorted(want))})",
                        "quota",
                    )
                )
            if not a.preempted:
                blocker = floor.blocker(a.resources)
                if blocker >= 0:
                    bpath = snap.paths[blocker]
                    g = snap.guaranteed_by_index[blocker] or {}
                    types = sorted(
                        t
                        for t in g
                        if a.resources.get(t, 0) > 0
                        and usage[blocker].get(t, 0) - a.resources[t] < g[t]
                    )
                    reasons.append(
                        Reason(
                            "guarantee_floor",
                            f"taking it would bring {bpath} below its guarantee "
                            f"{text.resource(g)} in {', '.join(types)} (usage "
                            f"{text.resource({t: usage[blocker].get(t, 0) for t in types})})",
                            "quota",
                        )
                    )
            quota_ok = not reasons
            reasons.extend(inter)
            if reasons:
                exclusions.append(Exclusion(a.key, leaf, dict(a.resources), tuple(reasons)))
            if quota_ok:
                kept.append(a)
        kept.sort(key=order_key)
        if limit is not None and len(kept) > limit:
            omitted[leaf] = len(kept) - limit
            kept = kept[: max(0, limit)]
        prev: Allocation | None = None
        for rank, a in enumerate(kept, start=1):
            candidates.append(
                Candidate(
                    key=a.key,
                    queue=leaf,
                    rank=rank,
                    resources=dict(a.resources),
                    originator=a.originator,
                    priority=a.priority,
                    allow_preemption=a.allow_preemption,
                    created=a.created,
                    reasons=_place_reasons(a, now, text),
                    after=None if prev is None or not default_order else _after_rule(prev, a),
                    inter_queue_excluded=bool(inter),
                )
            )
            prev = a
    return VictimExplanation(
        queue=queue_path,
        target=None if target is None else dict(target),
        leaves=tuple(leaves),
        candidates=tuple(candidates),
        exclusions=tuple(exclusions),
        omitted=omitted,
    )


# -- why each inter-queue victim is needed ---------------------------------------------


@dataclass(frozen=True, slots=True)
class NeededVictim:
    """One victim of a ``preempt`` or ``round`` answer and why it is released."""

    ask: str
    need: VictimNeed
    text: str
    """One sentence: what it frees on the node and under which queue's max."""

    @property
    def key(self) -> str:
        return self.need.key

    def to_dict(self) -> dict[str, object]:
        n = self.need
        return {
            "ask": self.ask,
            "key": n.key,
            "node": n.node,
            "node_short": dict(n.node_short),
            "node_freed": dict(n.node_freed),
            "queues": [
                {"queue": q.queue, "max": dict(q.max), "over": dict(q.over), "freed": dict(q.freed)}
                for q in n.queues
            ],
            "text": self.text,
        }


def needed_text(need: VictimNeed, text: TextFormat = PLAIN) -> str:
    """*need* as one sentence.

    >>> from engine.preempt_trim import QueueNeed
    >>> need = VictimNeed("b1", "n1", {"vcore": 2}, {"vcore": 2},
    ...                   (QueueNeed("root.team", {"vcore": 4}, {"vcore": 1}, {"vcore": 1}),))
    >>> needed_text(need)
    'frees {vcore: 2} on node n1, which lacked {vcore: 2} for the ask; frees {vcore: 1} \
in root.team, where the ask would exceed the max {vcore: 4} by {vcore: 1}'
    """
    parts: list[str] = []
    if need.node_freed:
        parts.append(
            f"frees {text.resource(need.node_freed)} on node {need.node}, which lacked "
            f"{text.resource(need.node_short)} for the ask"
        )
    for q in need.queues:
        parts.append(
            f"frees {text.resource(q.freed)} in {q.queue}, where the ask would exceed "
            f"the max {text.resource(q.max)} by {text.resource(q.over)}"
        )
    if not parts:
        return (
            "frees nothing the ask still lacks after the victims before it: it is "
            "released only because victims are released in order and a later one is needed"
        )
    return "; ".join(parts)


def explain_needed_victims(
    cluster: Cluster | PreemptionState,
    asks: Sequence[Ask],
    answer: PreemptAnswer | RoundAnswer,
    *,
    text: TextFormat = PLAIN,
) -> tuple[NeededVictim, ...]:
    """Why each victim of *answer* is released, in answer order.

    *answer* is a ``preempt`` answer for one of *asks*, or a ``round`` answer over
    them; a round is replayed (victims of earlier asks preempted, placed asks
    running, as in engine.md 6) so each ask is explained against the state it saw.
    Victims the cluster does not know (an answer from another snapshot) are left
    out; at the first result whose ask is not in *asks* the replay stops, since
    the state the later asks saw is then unknown.

    Raises:
        ScenarioError: an ask's queue is unknown or not a leaf.
    """
    state = cluster.fork() if isinstance(cluster, PreemptionState) else PreemptionState(cluster)
    allocations = {a.key: a for lst in state.leaf_candidates for a in lst}
    by_key = {a.key: a for a in asks}
    results = answer.results if isinstance(answer, RoundAnswer) else (answer,)
    out: list[NeededVictim] = []
    for result in results:
        ask = by_key.get(result.ask)
        if ask is None:
            break
        if result.node is None:
            continue
        if result.status == "preempted":
            victims = [allocations[k] for k in result.victims if k in allocations]
            for need in victim_needs(state, ask, result.node, victims):
                out.append(NeededVictim(ask.key, need, needed_text(need, text)))
            state.mark_preempted(victims)
        if result.status != "not_possible":
            state.place(ask, result.node)
    return tuple(out)
