"""Hypothesis strategies for engine tests: small random scenarios as JSON documents.

Documents (not dataclasses) are generated so that tests can permute input
lists, round-trip JSON and go through ``parse_scenario`` exactly like the
command line.  Sizes stay small so that property tests run fast.  Other test
modules (quota, timers) may append strategies here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

TYPES = ("vcore", "memory", "gpu")
POLICIES = (None, "default", "fence", "disabled", "Disabled", "bogus")

Doc = dict[str, Any]


@cache
def resource(
    min_size: int = 0, max_value: int = 6, types: tuple[str, ...] = TYPES
) -> st.SearchStrategy[dict[str, int]]:
    """A resource object over a few types with small quantities (zeros included)."""
    return st.dictionaries(
        st.sampled_from(types), st.integers(0, max_value), min_size=min_size, max_size=len(types)
    )


@cache
def positive_resource(max_value: int = 6) -> st.SearchStrategy[dict[str, int]]:
    """A resource with at least one positive quantity, mostly vcore and memory."""
    return st.dictionaries(
        st.sampled_from(("vcore", "memory", "vcore", "memory", "gpu")),
        st.integers(1, max_value),
        min_size=1,
        max_size=2,
    )


@cache
def mostly(value: object, other: object, odds: int = 4) -> st.SearchStrategy[Any]:
    """*value* most of the time (Hypothesis favours the first of a list when shrinking)."""
    return st.sampled_from((value,) * odds + (other,))


@st.composite
def queue_tree(draw: st.DrawFn, max_depth: int = 3) -> Doc:
    """A queue tree rooted at ``root`` with random limits and properties."""
    counter = [0]

    def build(name: str, depth: int, is_root: bool) -> Doc:
        q: Doc = {"name": name}
        if not is_root and draw(mostly(False, True, 2)):
            q["guaranteed"] = draw(resource(min_size=1, max_value=8))
        if draw(mostly(False, True, 3)):
            q["max"] = draw(resource(min_size=1, max_value=16))
        props: dict[str, str] = {}
        policy = draw(st.sampled_from((None,) * 8 + POLICIES[1:]))
        if policy is not None and not is_root:
            props["preemption.policy"] = policy
        if not is_root and draw(mostly(False, True, 5)):
            props["priority.policy"] = "fence"
        if draw(mostly(False, True, 3)):
            props["priority.offset"] = str(draw(st.integers(-3, 3)))
        if draw(mostly(False, True, 5)):
            props["preemption.delay"] = draw(st.sampled_from(["0s", "5s", "1m", "junk"]))
        if props:
            q["properties"] = props
        n_children = draw(st.integers(0 if not is_root else 1, 3)) if depth < max_depth else 0
        children = []
        for _ in range(n_children):
            counter[0] += 1
            children.append(build(f"q{counter[0]}", depth + 1, False))
        if children:
            q["children"] = children
        return q

    return build("root", 0, True)


def leaves(tree: Doc) -> list[str]:
    """Leaf paths of a generated tree, in path order."""
    out: list[str] = []

    def walk(q: Doc, prefix: str) -> None:
        path = f"{prefix}.{q['name']}" if prefix else q["name"]
        kids = q.get("children") or []
        if not kids:
            out.append(path)
        for c in kids:
            walk(c, path)

    walk(tree, "")
    return sorted(out)


def _allocation(draw: st.DrawFn, i: int, queue: str, node: str, resources: Doc) -> Doc:
    return {
        "key": f"a{i}",
        "app": f"app{i % 3}",
        "queue": queue,
        "node": node,
        "resources": resources,
        "priority": draw(st.integers(-2, 2)),
        "originator": draw(mostly(False, True)),
        "allow_preemption": draw(mostly(True, False)),
        "created": float(draw(st.integers(0, 50))),
        "required_node": draw(mostly(False, True, 6)),
        "preempted": draw(mostly(False, True, 6)),
    }


def _fill_nodes(draw: st.DrawFn, leaf_paths: list[str]) -> tuple[list[Doc], list[Doc]]:
    """1-4 nodes, mostly packed by allocations on random leaves."""
    leaves_drawn = st.sampled_from(tuple(leaf_paths))
    nodes: list[Doc] = []
    allocations: list[Doc] = []
    for n in range(draw(st.integers(1, 4))):
        node = f"n{n}"
        if draw(mostly(True, False, 3)):
            capacity = {"vcore": draw(st.integers(2, 8)), "memory": draw(st.integers(2, 8))}
            free = dict(capacity)
            for _ in range(draw(st.integers(0, 4))):
                want = draw(positive_resource(3))
                if all(free.get(t, 0) >= q for t, q in want.items()):
                    queue = draw(leaves_drawn)
                    allocations.append(_allocation(draw, len(allocations), queue, node, want))
                    free = {t: q - want.get(t, 0) for t, q in free.items()}
            rest = {t: q for t, q in free.items() if q > 0}
            if rest and draw(mostly(True, False, 2)):
                queue = draw(leaves_drawn)
                allocations.append(_allocation(draw, len(allocations), queue, node, rest))
        else:
            capacity = draw(resource(min_size=1, max_value=12))
            for _ in range(draw(st.integers(0, 3))):
                queue = draw(leaves_drawn)
                loose = draw(resource(min_size=1, max_value=5))
                allocations.append(_allocation(draw, len(allocations), queue, node, loose))
        nodes.append({"id": node, "capacity": capacity, "schedulable": draw(mostly(True, False))})
    return nodes, allocations


@st.composite
def cluster_doc(draw: st.DrawFn) -> Doc:
    """A scenario document without a request: tree, 1-4 nodes, a few allocations.

    Most nodes are packed (their allocations fill them), so that asks usually
    need preemption; some have random capacities and loose allocations.
    """
    tree = draw(queue_tree())
    leaf_paths = [p for p in leaves(tree) if p != "root"]
    if not leaf_paths:
        tree["children"] = [{"name": "only"}]
        leaf_paths = ["root.only"]
    nodes, allocations = _fill_nodes(draw, leaf_paths)
    return {
        "now": 1000.0,
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": tree,
        "nodes": nodes,
        "allocations": allocations,
    }


def find_queue(tree: Doc, path: str) -> Doc:
    """The queue object at *path* in a generated tree."""
    q = tree
    for name in path.split(".")[1:]:
        q = next(c for c in q["children"] if c["name"] == name)
    return q


def ask_doc(draw: st.DrawFn, tree: Doc, leaf_paths: list[str], key: str) -> Doc:
    """One ask on a random leaf (drawn inside a composite strategy).

    Usually the ask's leaf gets a generous guarantee: inter-queue preemption
    only serves guaranteed queues, and the invariants need ``preempted`` answers.
    """
    queue = draw(st.sampled_from(leaf_paths))
    if draw(mostly(True, False, 3)):
        find_queue(tree, queue)["guaranteed"] = {"vcore": 8, "memory": 8}
    return {
        "key": key,
        "app": "app-ask",
        "queue": queue,
        "resources": draw(
            st.one_of(
                st.dictionaries(
                    st.sampled_from(("vcore", "memory")), st.integers(1, 5), min_size=1
                ),
                positive_resource(3),
            )
        ),
        "priority": draw(st.sampled_from((2, 2, 2, 0, -2))),
        "allow_preempt_other": draw(mostly(True, False, 6)),
        "created": float(draw(mostly(0, 990))),
    }


@st.composite
def preempt_scenario(draw: st.DrawFn) -> Doc:
    """A full ``preempt`` scenario document."""
    doc = draw(cluster_doc())
    leaf_paths = [p for p in leaves(doc["queues"]) if p != "root"]
    doc["request"] = {"type": "preempt", "ask": ask_doc(draw, doc["queues"], leaf_paths, "ask")}
    return doc


def _decorate(draw: st.DrawFn, q: Doc, is_root: bool) -> None:
    """Random limits and properties on a fixed tree shape (guarantees are rarer here)."""
    if not is_root and draw(mostly(False, True, 3)):
        q["guaranteed"] = draw(resource(min_size=1, max_value=4))
    if draw(mostly(False, True, 4)):
        q["max"] = draw(resource(min_size=1, max_value=16))
    props: dict[str, str] = {}
    if not is_root:
        policy = draw(st.sampled_from((None,) * 10 + POLICIES[1:]))
        if policy is not None:
            props["preemption.policy"] = policy
        if draw(mostly(False, True, 6)):
            props["priority.policy"] = "fence"
    if draw(mostly(False, True, 4)):
        props["priority.offset"] = str(draw(st.integers(-3, 3)))
    if props:
        q["properties"] = props
    for c in q.get("children", ()):
        _decorate(draw, c, False)


@st.composite
def contended_preempt_scenario(draw: st.DrawFn) -> Doc:
    """A ``preempt`` scenario shaped for contention: a guaranteed ask leaf, packed nodes.

    Random trees rarely lead to ``preempted``; this fixed shape (with random
    limits, properties and allocations) does often, so the invariants about
    victims are really exercised.
    """
    tree: Doc = {
        "name": "root",
        "children": [
            {"name": "grp", "children": [{"name": "asker"}, {"name": "sib"}]},
            {"name": "other", "children": [{"name": "o1"}, {"name": "o2"}]},
            {"name": "solo"},
        ],
    }
    _decorate(draw, tree, True)
    asker = find_queue(tree, "root.grp.asker")
    asker["guaranteed"] = {"vcore": 8, "memory": 8}
    victim_leaves = ["root.grp.sib", "root.other.o1", "root.other.o2", "root.solo"]
    nodes, allocations = _fill_nodes(draw, [*victim_leaves, "root.grp.asker"])
    ask = ask_doc(draw, tree, ["root.grp.asker"], "ask")
    return {
        "now": 1000.0,
        "queues": tree,
        "nodes": nodes,
        "allocations": allocations,
        "request": {"type": "preempt", "ask": ask},
    }


@st.composite
def round_scenario(draw: st.DrawFn) -> Doc:
    """A full ``round`` scenario document with 1-4 asks and maybe a pace cap."""
    doc = draw(cluster_doc())
    leaf_paths = [p for p in leaves(doc["queues"]) if p != "root"]
    count = draw(st.integers(1, 4))
    asks = [ask_doc(draw, doc["queues"], leaf_paths, f"ask{i}") for i in range(count)]
    request: Doc = {"type": "round", "asks": asks}
    if draw(st.booleans()):
        request["max_preempted"] = draw(resource(min_size=1, max_value=8))
    doc["request"] = request
    return doc


@st.composite
def resources_scenario(draw: st.DrawFn) -> Doc:
    """A ``resources`` request on a random queue."""
    doc = draw(cluster_doc())
    paths: list[str] = []

    def walk(q: Doc, prefix: str) -> None:
        path = f"{prefix}.{q['name']}" if prefix else q["name"]
        paths.append(path)
        for c in q.get("children") or []:
            walk(c, path)

    walk(doc["queues"], "")
    doc["request"] = {"type": "resources", "queue": draw(st.sampled_from(paths))}
    return doc


def permute(doc: Doc, draw: st.DrawFn) -> Doc:
    """The same scenario with nodes, allocations, children (and round asks) reordered."""
    import copy

    out = copy.deepcopy(doc)
    out["nodes"] = draw(st.permutations(out["nodes"]))
    out["allocations"] = draw(st.permutations(out["allocations"]))

    def shuffle(q: Doc) -> None:
        kids = q.get("children")
        if kids:
            q["children"] = draw(st.permutations(kids))
            for c in q["children"]:
                shuffle(c)

    shuffle(out["queues"])
    request = out.get("request", {})
    if request.get("type") == "round":
        request["asks"] = draw(st.permutations(request["asks"]))
    return out


# -- quota_change (appended by the quota engineer) -------------------------------------


def queue_paths(tree: Doc) -> list[str]:
    """Every queue path of a generated tree (root included), in path order."""
    paths: list[str] = []

    def walk(q: Doc, prefix: str) -> None:
        path = f"{prefix}.{q['name']}" if prefix else q["name"]
        paths.append(path)
        for c in q.get("children") or []:
            walk(c, path)

    walk(tree, "")
    return sorted(paths)


@st.composite
def quota_scenario(draw: st.DrawFn) -> Doc:
    """A ``quota_change`` on a random queue; the new max usually lowers some used type.

    The new max is drawn around the queue's usage (preempted allocations do not
    count), so targets are mostly non-empty; ``miss`` varies, the partition flag
    is sometimes off and some queues carry a ``quota_preemption_delay``.
    """
    doc = draw(cluster_doc())
    doc["partition"] = {
        "quota_preemption_enabled": draw(st.integers(0, 7)) > 0,
        "miss": draw(st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5, 1.0])),
    }

    def add_delays(q: Doc) -> None:
        if draw(st.integers(0, 3)) == 0:
            q["quota_preemption_delay"] = draw(st.sampled_from([0, 30, 3600]))
        for c in q.get("children") or []:
            add_delays(c)

    add_delays(doc["queues"])
    paths = queue_paths(doc["queues"])
    # mostly a queue with usage (a parent when there is one), so that plans have work to do
    used = [
        p
        for p in paths
        if any(
            not a["preempted"] and (a["queue"] == p or a["queue"].startswith(p + "."))
            for a in doc["allocations"]
        )
    ]
    used_parents = [p for p in used if any(q.startswith(p + ".") for q in used)]
    pool = draw(st.sampled_from([paths, used or paths, used_parents or used or paths]))
    path = draw(st.sampled_from(pool))
    usage: dict[str, int] = {}
    for a in doc["allocations"]:
        if not a["preempted"] and (a["queue"] == path or a["queue"].startswith(path + ".")):
            for t, q in a["resources"].items():
                usage[t] = usage.get(t, 0) + q
    new_max: dict[str, int] = {}
    for t in TYPES:
        choice = draw(st.integers(0, 4))
        if choice == 0:
            continue  # type left unlimited
        in_use = usage.get(t, 0)
        new_max[t] = draw(st.integers(0, max(0, in_use - 1))) if choice < 4 and in_use else in_use
    doc["request"] = {"type": "quota_change", "queue": path, "new_max": new_max}
    return doc


@st.composite
def contended_round_scenario(draw: st.DrawFn) -> Doc:
    """A ``round`` over the contended shape: 1-4 asks on the guaranteed leaf, maybe a cap."""
    doc = draw(contended_preempt_scenario())
    count = draw(st.integers(1, 4))
    asks = [ask_doc(draw, doc["queues"], ["root.grp.asker"], f"ask{i}") for i in range(count)]
    request: Doc = {"type": "round", "asks": asks}
    if draw(st.booleans()):
        request["max_preempted"] = draw(resource(min_size=1, max_value=6))
    doc["request"] = request
    return doc


@st.composite
def trimming_preempt_scenario(draw: st.DrawFn) -> Doc:
    """A ``preempt`` scenario shaped for trimming (engine.md 3.10): many small victims.

    Nodes are filled with one- or two-unit tasks of one or both types, sometimes
    leaving part of the ask free or holding tasks already being preempted, and
    the ask's parent sometimes has a max; so the victims needed depend on what
    the node and the queues already have free, not only on the victims' sum.
    """
    tree: Doc = {
        "name": "root",
        "children": [
            {"name": "grp", "children": [{"name": "asker"}, {"name": "sib"}]},
            {"name": "other"},
        ],
    }
    grp = tree["children"][0]
    if draw(st.booleans()):
        grp["max"] = {t: draw(st.integers(2, 12)) for t in draw(st.sampled_from(_TYPE_SETS))}
    grp["children"][0]["guaranteed"] = {"vcore": 8, "memory": 8}
    victim_leaves = ["root.grp.sib", "root.other"]
    nodes: list[Doc] = []
    allocations: list[Doc] = []
    for n in range(draw(st.integers(1, 2))):
        node = f"n{n}"
        capacity = {"vcore": draw(st.integers(2, 8)), "memory": draw(st.integers(2, 8))}
        free = dict(capacity)
        keep_free = {t: draw(st.integers(0, 2)) for t in capacity}
        for _ in range(12):
            want = {t: draw(st.integers(1, 2)) for t in draw(st.sampled_from(_TYPE_SETS))}
            if all(free[t] - q >= keep_free[t] for t, q in want.items()):
                queue = draw(st.sampled_from(victim_leaves))
                allocations.append(_allocation(draw, len(allocations), queue, node, want))
                free = {t: q - want.get(t, 0) for t, q in free.items()}
        nodes.append({"id": node, "capacity": capacity, "schedulable": True})
    ask = {
        "key": "ask",
        "app": "app-ask",
        "queue": "root.grp.asker",
        "resources": {t: draw(st.integers(1, 4)) for t in draw(st.sampled_from(_TYPE_SETS))},
        "priority": 2,
        "allow_preempt_other": True,
        "created": 0.0,
    }
    return {
        "now": 1000.0,
        "queues": tree,
        "nodes": nodes,
        "allocations": allocations,
        "request": {"type": "preempt", "ask": ask},
    }


_TYPE_SETS: tuple[tuple[str, ...], ...] = (("vcore",), ("memory",), ("vcore", "memory"))


@st.composite
def trimming_round_scenario(draw: st.DrawFn) -> Doc:
    """A ``round`` of 1-4 asks over the :func:`trimming_preempt_scenario` shape."""
    doc = draw(trimming_preempt_scenario())
    asks = []
    for i in range(draw(st.integers(1, 4))):
        types = draw(st.sampled_from(_TYPE_SETS))
        asks.append(
            {
                **doc["request"]["ask"],
                "key": f"ask{i}",
                "resources": {t: draw(st.integers(1, 4)) for t in types},
                "created": float(i),
            }
        )
    doc["request"] = {"type": "round", "asks": asks}
    return doc


def any_preempt() -> st.SearchStrategy[Doc]:
    """Random or contended ``preempt`` scenarios."""
    return st.one_of(preempt_scenario(), contended_preempt_scenario())


def any_round() -> st.SearchStrategy[Doc]:
    """Random or contended ``round`` scenarios."""
    return st.one_of(round_scenario(), contended_round_scenario())
