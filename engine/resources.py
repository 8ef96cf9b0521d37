"""Multi-type resource algebra (engine.md section 1).

A resource is ``None`` ("nil": nothing defined) or a mapping from a resource
type name to an integer quantity.  A type that is missing is *not defined*,
which is not the same as 0: undefined guaranteed types are fully preemptable,
undefined max types are unlimited.  Every function here is pure: it never
mutates its arguments and returns a new ``dict`` (or ``None``).

>>> sub({"vcore": 5}, {"memory": 2})
{'vcore': 5, 'memory': -2}
>>> sub_existing({"vcore": 5}, {"vcore": 6, "memory": 1})
{'vcore': -1}
>>> fit_in({"vcore": 5}, {"vcore": 1, "memory": 1})
False
>>> fit_undef({"vcore": 5}, {"vcore": 1, "memory": 1})
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from operator import itemgetter

Resource = Mapping[str, int]
"""A defined resource: type name -> quantity (may be negative in intermediate results)."""

MAX_QUANTITY = 2**63 - 1


def copy(a: Resource | None) -> dict[str, int] | None:
    """A fresh dict copy of *a* (``None`` stays ``None``)."""
    return None if a is None else dict(a)


def drop_zeros(a: Resource | None) -> dict[str, int]:
    """*a* without its zero entries (``None`` reads as empty).

    >>> drop_zeros({"vcore": 0, "memory": 3})
    {'memory': 3}
    """
    if not a:
        return {}
    return {t: q for t, q in a.items() if q != 0}


def add(a: Resource | None, b: Resource | None) -> dict[str, int]:
    """Union of types, missing = 0; ``None`` acts as ``{}``.

    >>> add({"vcore": 1}, {"vcore": 2, "memory": 3})
    {'vcore': 3, 'memory': 3}
    """
    out = dict(a) if a else {}
    if b:
        for t, q in b.items():
            out[t] = out.get(t, 0) + q
    return out


def sub(a: Resource | None, b: Resource | None) -> dict[str, int]:
    """Union of types, missing = 0; ``None`` acts as ``{}``.

    >>> sub({"vcore": 5}, {"memory": 2})
    {'vcore': 5, 'memory': -2}
    """
    out = dict(a) if a else {}
    if b:
        for t, q in b.items():
            out[t] = out.get(t, 0) - q
    return out


def total(items: Iterable[Resource | None]) -> dict[str, int]:
    """Sum of many resources (``None`` entries count as empty).

    >>> total([{"vcore": 1}, None, {"vcore": 2, "memory": 1}])
    {'vcore': 3, 'memory': 1}
    """
    out: dict[str, int] = {}
    for r in items:
        if r:
            for t, q in r.items():
                out[t] = out.get(t, 0) + q
    return out


def total_of(items: Sequence[Resource]) -> dict[str, int]:
    """:func:`total` of a list without ``None`` entries, one C-level pass per type.

    The same dict (types in order of first appearance, zero sums kept), faster
    for long lists whose entries mostly share their types (node capacities).

    >>> total_of([{"vcore": 1}, {"vcore": 2, "memory": 1}])
    {'vcore': 3, 'memory': 1}
    """
    out: dict[str, int] = {}
    for t in dict.fromkeys(chain.from_iterable(items)):
        try:
            out[t] = sum(map(itemgetter(t), items))
        except KeyError:  # some entries lack the type
            out[t] = sum([r.get(t, 0) for r in items])
    return out


def sub_existing(base: Resource | None, d: Resource | None) -> dict[str, int] | None:
    """Only *base*'s types: ``base[t] - d.get(t, 0)``.

    ``None`` if base is ``None``; a copy of base if d is ``None``.

    >>> sub_existing({"vcore": 5}, {"vcore": 6, "memory": 1})
    {'vcore': -1}
    >>> sub_existing(None, {"vcore": 1}) is None
    True
    """
    if base is None:
        return None
    if d is None:
        return dict(base)
    return {t: q - d.get(t, 0) for t, q in base.items()}


def sub_clamp(a: Resource | None, b: Resource | None) -> dict[str, int]:
    """Union of types, ``max(0, a[t] - b[t])``, missing = 0.

    >>> sub_clamp({"vcore": 5}, {"vcore": 2, "memory": 3})
    {'vcore': 3, 'memory': 0}
    """
    a = a or {}
    b = b or {}
    out = {t: max(0, q - b.get(t, 0)) for t, q in a.items()}
    for t in b:
        if t not in out:
            out[t] = 0
    return out


def cmin(a: Resource | None, b: Resource | None) -> dict[str, int] | None:
    """Component-wise min over the union of types.

    Both ``None`` -> ``None``; one ``None`` -> a copy of the other; where only
    one side has a type, that side's value is kept.

    >>> cmin({"vcore": 0}, {"vcore": -5, "memory": 1})
    {'vcore': -5, 'memory': 1}
    """
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = dict(a)
    for t, q in b.items():
        cur = out.get(t)
        if cur is None or q < cur:
            out[t] = q
    return out


def cmin_existing(left: Resource | None, right: Resource | None) -> dict[str, int] | None:
    """*left*'s types only, lowered to ``right[t]`` where right has the type.

    >>> cmin_existing({"vcore": 5}, {"memory": 1})
    {'vcore': 5}
    >>> cmin_existing({"vcore": 5, "memory": 9}, {"memory": 1})
    {'vcore': 5, 'memory': 1}
    """
    if left is None:
        return None
    if right is None:
        return dict(left)
    out = dict(left)
    for t, q in left.items():
        r = right.get(t)
        if r is not None and r < q:
            out[t] = r
    return out


def merge_missing(left: Resource | None, right: Resource | None) -> dict[str, int] | None:
    """*left* plus the types of *right* that left does not have.

    >>> merge_missing({"vcore": 5}, {"vcore": 0, "memory": 3})
    {'vcore': 5, 'memory': 3}
    """
    if left is None:
        return None if right is None else dict(right)
    if right is None:
        return dict(left)
    out = dict(left)
    for t, q in right.items():
        if t not in out:
            out[t] = q
    return out


def fit_in(big: Resource | None, small: Resource | None) -> bool:
    """Every type of *small* fits in ``max(0, big[t])``; missing in big = 0.

    >>> fit_in({"vcore": 5}, {"vcore": 1, "memory": 1})
    False
    """
    if not small:
        return True
    big = big or {}
    for t, q in small.items():
        b = big.get(t, 0)
        if q > (b if b > 0 else 0):
            return False
    return True


def fit_undef(big: Resource | None, small: Resource | None) -> bool:
    """As :func:`fit_in`, but types missing in *big* are unlimited.

    >>> fit_undef({"vcore": 5}, {"vcore": 1, "memory": 1})
    True
    """
    if not small:
        return True
    big = big or {}
    for t, q in small.items():
        b = big.get(t)
        if b is not None and q > (b if b > 0 else 0):
            return False
    return True


def fit_actual(big: Resource | None, small: Resource | None) -> bool:
    """Types missing in *big* skipped; negatives compared as they are.

    >>> fit_actual({"vcore": -1}, {"vcore": 0})
    False
    """
    if not small:
        return True
    big = big or {}
    for t, q in small.items():
        b = big.get(t)
        if b is not None and q > b:
            return False
    return True


def equals(a: Resource | None, b: Resource | None) -> bool:
    """Both ``None`` -> true; one ``None`` -> false; else equal over the union, missing = 0.

    >>> equals({"vcore": 5, "gpu": 0}, {"vcore": 5})
    True
    """
    if a is None or b is None:
        return a is None and b is None
    for t, q in a.items():
        if b.get(t, 0) != q:
            return False
    return all(t in a or q == 0 for t, q in b.items())


def is_zero(a: Resource | None) -> bool:
    """``None``, empty, or all values 0.

    >>> is_zero({})
    True
    """
    return not a or all(q == 0 for q in a.values())


def is_empty(a: Resource | None) -> bool:
    """``None`` or ``{}``."""
    return not a


def equals_or_empty(a: Resource | None, b: Resource | None) -> bool:
    """``(is_zero(a) and is_zero(b)) or equals(a, b)``."""
    return (is_zero(a) and is_zero(b)) or equals(a, b)


def no_negative(a: Resource | None) -> bool:
    """No value is below 0 (``None`` -> true)."""
    return not a or all(q >= 0 for q in a.values())


def over_g(ask: Resource | None, rem: Resource | None) -> bool:
    """Some type of *ask* is present in *rem* with a negative value.

    >>> over_g({"vcore": 1}, {"memory": -1})
    False
    >>> over_g({"vcore": 1}, {"vcore": -1})
    True
    """
    if not ask or not rem:
        return False
    for t in ask:
        r = rem.get(t)
        if r is not None and r < 0:
            return True
    return False


def under_g(ask: Resource | None, rem: Resource | None) -> bool:
    """``not over_g(ask, rem)``."""
    return not over_g(ask, rem)


def match_any(a: Resource | None, b: Resource | None) -> bool:
    """Both defined and some type of *a* is present in *b* (values ignored).

    >>> match_any({"vcore": 1}, {"vcore": 0})
    True
    >>> match_any({"vcore": 1}, None)
    False
    """
    if a is None or b is None:
        return False
    return any(t in b for t in a)


def exceeds_any(m: Resource | None, x: Resource | None) -> bool:
    """Some type present in both with ``x[t] > m[t]``.

    >>> exceeds_any({"vcore": 5}, {"vcore": 6, "memory": 100})
    True
    """
    if not m or not x:
        return False
    for t, q in x.items():
        lim = m.get(t)
        if lim is not None and q > lim:
            return True
    return False


def gt_existing(r: Resource | None, s: Resource | None) -> bool:
    """yunikorn's "strictly greater, only existing types" (engine.md section 1).

    >>> gt_existing({"vcore": 5, "memory": 10}, {"vcore": 6, "memory": 2})
    False
    >>> gt_existing({"vcore": 5}, {})
    True
    >>> gt_existing({"vcore": 5}, {"vcore": 5})
    False
    """
    r = r or {}
    s = s or {}
    if not s:
        return bool(r) and all(q > 0 for q in r.values())
    shared = False
    some_less = False
    for t, sq in s.items():
        rq = r.get(t)
        if rq is None:
            continue
        shared = True
        if sq > rq:
            return False
        if sq < rq:
            some_less = True
    if shared:
        return some_less
    return bool(r)


def validate_quantity(value: object) -> int | None:
    """The integer value of a JSON quantity, or ``None`` when it is not one.

    Integer-valued floats (``200.0``) are accepted; ``200.5``, booleans,
    negatives and values above 2**63-1 are not.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        q = value
    elif isinstance(value, float):
        if not value.is_integer():
            return None
        q = int(value)
    else:
        return None
    if q < 0 or q > MAX_QUANTITY:
        return None
    return q
