"""configvalidator.go's placement rule and node sorting checks."""

from __future__ import annotations

import re
from typing import Any

from dashboard.importers.config.decoding import _fail, _Obj
from dashboard.importers.config.specs import ROOT
from dashboard.importers.config.validation import _GROUP, _Q, _USER

_REGEX_SPECIAL = re.compile(r"[\^$*+?()\[{}|]")


_RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")


# Node sorting policies known to the scheduler (policies.SortingPolicyFromString).
_NODE_SORT_POLICIES = ("", "fair", "binpacking")


def _rule_chain(rule: _Obj) -> list[_Obj]:
    chain: list[_Obj] = []
    cur: _Obj | None = rule
    while cur is not None:
        chain.append(cur)
        cur = cur.get("parent")
    chain.reverse()
    return chain


def _check_rule(rule: _Obj, where: str) -> None:
    name = rule.get("name") or ""
    if _RULE_NAME.fullmatch(name) is None:
        raise _fail(
            f"{where}: invalid rule name '{name}', a name must be a valid identifier", rule.line
        )
    parent = rule.get("parent")
    if parent is not None:
        _check_rule(parent, where)
    flt = rule.get("filter")
    if flt is None:
        return
    ftype = flt.get("type") or ""
    if ftype and ftype.lower() not in ("allow", "deny"):
        raise _fail(f"{where}: invalid filter type '{ftype}' (use allow or deny)", flt.line)
    for names, pattern, label in (
        (flt.get("users") or [], _USER, "user"),
        (flt.get("groups") or [], _GROUP, "group"),
    ):
        if len(names) == 1 and pattern.fullmatch(names[0]) is None:
            try:
                re.compile(names[0])
                ok = _REGEX_SPECIAL.search(names[0]) is not None
            except re.error:
                ok = False
            if not ok:
                raise _fail(
                    f"{where}: filter {label} list is not a proper list or regexp: {names}",
                    flt.line,
                )


def _check_placement(rules: list[Any] | None, root: _Q, part: str) -> None:
    """checkPlacementRules: syntax, and the static part of each rule's queue path."""
    if not rules:
        return
    for i, rule in enumerate(rules):
        if rule is None:
            raise _fail(f"partition {part}: placement rule #{i} is empty", None)
        _check_rule(rule, f"partition {part}: placement rule #{i}")
    for i, rule in enumerate(rules):
        static = ""
        chain_names: list[str] = []
        dynamic = False
        for r in _rule_chain(rule):
            chain_names.append(r.get("name") or "")
            if dynamic:
                continue
            if r.get("name") != "fixed":
                static = static or "<dynamic>"
                dynamic = True
                continue
            value = r.get("value") or ""
            if value.startswith(ROOT):
                if static:
                    raise _fail(
                        f"partition {part}: placement rule #{i}: illegal fully qualified 'fixed' "
                        f"rule with value {value}",
                        r.line,
                    )
                static = value
                continue
            static = f"{static or ROOT}.{value}"
        if not static.startswith(ROOT):
            continue
        chain = "->".join(reversed(chain_names))
        _check_static_path(static, bool(rule.get("create")), dynamic, root, i, chain, rule.line)


def _check_static_path(
    path: str, create: bool, dynamic: bool, root: _Q, rule_no: int, chain: str, line: int
) -> None:
    parts = path.lower().split(".")
    level: list[_Q] = [root]
    parent: _Q | None = None
    for depth, part in enumerate(parts):
        if not level:
            assert parent is not None
            if not parent.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues ({path}) "
                    f"which cannot be created because the last queue ({parent.path}) is a leaf; "
                    "set parent: true on it",
                    line,
                )
            if not create:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues "
                    f"({path}) and create is false",
                    line,
                )
            return
        found = next((q for q in level if q.name == part), None)
        if found is None:
            if not create:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references non-existing queues "
                    f"({path}) and create is false",
                    line,
                )
            return
        if depth == len(parts) - 1:
            if dynamic and not found.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) places below {found.path}, which needs "
                    "an explicit parent: true (the scheduler checks the flag, not the children)",
                    found.line,
                )
            if not dynamic and found.parent_flag:
                raise _fail(
                    f"placement rule #{rule_no} ({chain}) references a queue ({found.path}) "
                    "which is not a leaf",
                    line,
                )
            return
        parent = found
        level = found.children


def _check_node_sort(part_obj: _Obj, part: str) -> None:
    policy = part_obj.get("nodesortpolicy")
    if policy is None:
        return
    ptype = policy.get("type") or ""
    if ptype.lower() not in _NODE_SORT_POLICIES:
        raise _fail(
            f"partition {part}: undefined node sorting policy '{ptype}' (fair or binpacking)",
            policy.line_of("type"),
        )
    weights = policy.get("resourceweights")
    if weights is not None:
        for t, w in weights.items.items():
            if w < 0:
                raise _fail(
                    f"partition {part}: negative resource weight for {t} is not allowed",
                    weights.key_lines.get(t, weights.line),
                )
