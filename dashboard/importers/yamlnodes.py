"""Safe YAML reading: ruamel.yaml's parser, a guarded tree of plain nodes, line numbers.

The queue-config decoder needs what Go's yaml.v3 sees: each scalar's original
text (``10``, ``4000m``, ``NO`` stay text; Go then parses quantities itself),
whether it was quoted, and the line it sits on.  So this module does not
construct Python objects at all: it walks ruamel.yaml's event stream (the
library does the YAML syntax) and builds small nodes, refusing on the way

- anchors and aliases (no alias-expansion bomb can be built),
- nesting deeper than :data:`MAX_YAML_DEPTH` (checked per event, so a
  10,000-level document stops early and never reaches a recursive step),
- duplicate mapping keys (yaml.v3 refuses them too),
- more than one document, and explicit tags other than the core ones.

Sizes are capped by the callers *before* parsing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from dashboard.importers.errors import ImportFailure, line_location

MAX_YAML_DEPTH = 64
"""Deepest nesting of mappings/sequences accepted (a queue level uses two)."""

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_CORE_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "map", "seq")
)


@dataclass(slots=True)
class YScalar:
    """A scalar's text as written (quotes removed), whether it was plain, and its line."""

    text: str
    plain: bool
    line: int
    tag: str | None = None
    style: str | None = None

    @property
    def is_null(self) -> bool:
        if self.tag is not None:
            return self.tag.endswith(":null")
        return self.plain and self.text in _NULLS


@dataclass(slots=True)
class YMap:
    line: int
    pairs: list[tuple[YScalar, YNode]] = field(default_factory=list)


@dataclass(slots=True)
class YSeq:
    line: int
    items: list[YNode] = field(default_factory=list)


YNode = YScalar | YMap | YSeq


def kind_name(node: YNode) -> str:
    """yaml.v3's name for a node's kind, for error messages (``!!map``, ``!!seq``, ``!!str``)."""
    if isinstance(node, YMap):
        return "!!map"
    if isinstance(node, YSeq):
        return "!!seq"
    if node.is_null:
        return "!!null"
    return "!!str"


def load_nodes(text: str, *, line_offset: int = 0) -> YNode | None:
    """Parse one YAML document into nodes; ``None`` for an empty document.

    Args:
        text: the YAML text (already size-checked and decoded).
        line_offset: added to every line number (for text embedded in a ConfigMap).

    Raises:
        ImportFailure: naming the line, for bad YAML or a refused construct.
    """
    # the C parser (ruamel.yaml.clib) when installed, which is faster; same events otherwise
    yaml = YAML(typ="safe")
    stack: list[YMap | YSeq] = []
    pending_key: list[YScalar | None] = []
    seen_keys: list[dict[str, int]] = []
    root: YNode | None = None
    documents = 0

    def fail(message: str, line: int) -> ImportFailure:
        return ImportFailure(message, line_location(line))

    def attach(node: YNode, line: int) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        parent = stack[-1]
        if isinstance(parent, YSeq):
            parent.items.append(node)
            return
        key = pending_key[-1]
        if key is None:
            if not isinstance(node, YScalar):
                raise fail("mapping keys must be plain scalars", line)
            first = seen_keys[-1].get(node.text)
            if first is not None:
                raise fail(f'mapping key "{node.text}" already defined at line {first}', line)
            seen_keys[-1][node.text] = line
            pending_key[-1] = node
        else:
            parent.pairs.append((key, node))
            pending_key[-1] = None

    try:
        for event in yaml.parse(text):
            kind = type(event)
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                stack.pop()
                pending_key.pop()
                seen_keys.pop()
                continue
            line = (event.start_mark.line + 1 + line_offset) if event.start_mark else 0
            if kind is ScalarEvent or kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.anchor is not None:
                    raise fail(
                        f"YAML anchors (&{event.anchor}) are not accepted in queue configs", line
                    )
                tag = event.tag
                tag_text = None
                if tag is not None:
                    tag_text = str(tag)
                    if tag_text not in _CORE_TAGS:
                        raise fail(f"unsupported YAML tag {tag_text}", line)
                if kind is ScalarEvent:
                    style = event.style or None  # the C parser reports plain as ""
                    plain = style is None and tag_text is None
                    attach(YScalar(event.value, plain, line, tag_text, style), line)
                    continue
                coll: YMap | YSeq = YMap(line) if kind is MappingStartEvent else YSeq(line)
                attach(coll, line)
                stack.append(coll)
                pending_key.append(None)
                seen_keys.append({})
                if len(stack) > MAX_YAML_DEPTH:
                    raise fail(f"nesting deeper than {MAX_YAML_DEPTH} levels", line)
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise fail(
                        "more than one YAML document ('---'); the scheduler reads only the "
                        "first, so the rest would be silently lost",
                        line,
                    )
            elif kind is AliasEvent:
                raise fail(
                    f"YAML aliases (*{event.anchor}) are not accepted in queue configs; "
                    "write the values out",
                    line,
                )
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        line = mark.line + 1 + line_offset if mark is not None else None
        position = getattr(exc, "position", None)  # ReaderError: a bad character
        if line is None and isinstance(position, int):
            line = text.count("\n", 0, position) + 1 + line_offset
        raise ImportFailure(f"invalid YAML: {problem}", line_location(line)) from None
    return root
