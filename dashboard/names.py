"""The one rule for names (cluster, partition, queue, node, application, resource type,
allocation and ask keys) and for text no database column can hold.

Pure Python (the importers use it too). Every name is checked by :func:`name_problem`:
a string of 1 to ``MAX_CHARS[kind]`` characters (what its database column holds),
without control characters (NUL among them) or lone surrogates (U+D800 to U+DFFF,
which no UTF-8 database stores); partition and cluster names without white space.
Queue paths are names joined by dots, within ``MAX_CHARS["queue path"]``. Free text
(a scenario's other strings and keys) is checked by :func:`find_unstorable` for NUL
bytes and lone surrogates only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Longest name of each kind: the length of the database column that stores it.
MAX_CHARS: Mapping[str, int] = {
    "cluster": 200,
    "partition": 200,
    "queue": 255,
    "queue path": 1000,
    "node": 255,
    "application": 255,
    "resource type": 255,
    "allocation key": 500,
    "ask key": 500,
}

#: Kinds whose names are also held to a pattern: a cluster is named by the
#: administrator and appears in URLs and file names.
_PATTERNS: Mapping[str, tuple[re.Pattern[str], str]] = {
    "cluster": (
        re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*"),
        "letters, digits, '_', '.', '-', starting with a letter or digit",
    ),
}

NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Control characters (C0, DEL, C1), refused in every name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: White space as well, refused in the names the administrator gives (partition,
#: cluster); names the scheduler reports are shown as they are (escaped).
_NOT_IN_NAMES = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_NO_SPACES = frozenset({"cluster", "partition"})


def text_problem(text: str) -> str | None:
    """Why *text* cannot be stored in a text column, or None.

    >>> text_problem("ok"), text_problem("a\\x00b")
    (None, 'contains a NUL byte (\\\\x00), which is not accepted')
    """
    if NUL in text:
        return "contains a NUL byte (\\x00), which is not accepted"
    if _SURROGATE.search(text):
        return "contains a lone surrogate (U+D800 to U+DFFF), which is not text"
    return None


def name_problem(kind: str, value: object) -> str | None:
    """Why *value* is not a valid name of *kind* (a key of :data:`MAX_CHARS`), or None.

    >>> name_problem("partition", "default") is None, name_problem("partition", "a b")
    (True, "'a b' holds white space or a control character, which no partition name may")
    """
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return f"must not be empty (a {kind} name)"
    limit = MAX_CHARS[kind]
    if len(value) > limit:
        return f"is {len(value)} characters long: a {kind} name holds at most {limit}"
    problem = text_problem(value)
    if problem is not None:
        return problem
    pattern = _PATTERNS.get(kind)
    if pattern is not None and pattern[0].fullmatch(value) is None:
        return f"{value[:60]!r} is not a {kind} name: {pattern[1]}, at most {limit} characters"
    if _CONTROL.search(value) or (kind in _NO_SPACES and _NOT_IN_NAMES.search(value)):
        what = "white space or a control character" if kind in _NO_SPACES else "a control character"
        return f"{value[:60]!r} holds {what}, which no {kind} name may"
    return None


def names_are_plain(kind: str, values: Iterable[object]) -> bool:
    """Whether :func:`name_problem` finds nothing in any of *values*, checked together
    (one pass over their joined text instead of one call per name); False means one of
    them may be refused, and the caller asks :func:`name_problem` name by name.

    >>> names_are_plain("node", ["a", "b"]), names_are_plain("node", ["a", "b\\x00"])
    (True, False)
    """
    if kind in _PATTERNS or kind in _NO_SPACES:
        return False
    names = list(values)
    if not names:
        return True
    if not all(type(v) is str for v in names):
        return False
    strings: list[str] = names  # type: ignore[assignment]  # every one a str, checked above
    lengths = list(map(len, strings))
    if min(lengths) == 0 or max(lengths) > MAX_CHARS[kind]:
        return False
    text = "".join(strings)
    return NUL not in text and _SURROGATE.search(text) is None and _CONTROL.search(text) is None


def path_problem(path: str) -> str | None:
    """Why a dotted queue path is too long for its column, or None (its parts are
    checked one by one as queue names)."""
    limit = MAX_CHARS["queue path"]
    if len(path) > limit:
        return f"the queue path is {len(path)} characters long: a queue path holds at most {limit}"
    return None


def find_unstorable(data: object, path: str = "") -> tuple[str, str] | None:
    """The path (``a.b[2].c``) of the first key or string a database cannot store, and
    why, else None.

    >>> find_unstorable({"a": [1, "x", {"b": "\\ud800"}]})
    ('a[2].b', 'contains a lone surrogate (U+D800 to U+DFFF), which is not text')
    """
    if not _holds_unstorable(data):
        return None
    stack: list[tuple[str, object]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                return where or "body", problem
        elif isinstance(value, Mapping):
            items = list(value.items())
            for key, item in reversed(items):
                name = f"{where}.{key}" if where else str(key)
                problem = text_problem(str(key))
                if problem is not None:
                    return shown(name), problem
                stack.append((shown(name), item))
        elif isinstance(value, list | tuple):
            for i in reversed(range(len(value))):
                stack.append((f"{where}[{i}]", value[i]))
    return None


def _holds_unstorable(data: object) -> bool:
    """Whether any key or string of *data* cannot be stored (a walk without paths)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if type(value) is str:
            if NUL in value or _SURROGATE.search(value):
                return True
        elif isinstance(value, Mapping):
            for key in value:
                if type(key) is str and (NUL in key or _SURROGATE.search(key)):
                    return True
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return False


def shown(text: str) -> str:
    """*text* fit for an error message: NUL bytes and lone surrogates written as escapes."""
    return text.replace(NUL, "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
