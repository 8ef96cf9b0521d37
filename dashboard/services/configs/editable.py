"""The text an administrator edits as "the current config" on the plan page.

A config read from the scheduler (``/ws/v1/config``, a state dump, a REST folder's
``config.json``) is its normalised dump: every key quoted, every empty field written,
the comments gone. When the administrator's own queues.yaml with the same checksum
(the scheduler reports the SHA-256 of the text it loaded) was imported, that text is
offered, comments and all; else the dump without its empty fields.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from dashboard import models

_EMPTY: tuple[Any, ...] = (None, "", [], {})


def _without_empties(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _without_empties(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if not any(v == e for e in _EMPTY)}
    if isinstance(value, list):
        return [_without_empties(v) for v in value]
    return value


def editable_text(version: models.ConfigVersion) -> str:
    """The text to edit for *version* (see the module docstring)."""
    if not isinstance(version.parsed, dict) or version.parsed.get("source_format") != "scheduler":
        return version.text
    own = (
        models.ConfigVersion.objects.filter(partition=version.partition, checksum=version.checksum)
        .exclude(parsed__source_format="scheduler")
        .order_by("-number")
        .first()
    )
    if own is not None:
        return own.text
    reader = YAML(typ="safe", pure=True)
    try:
        doc = reader.load(version.text)
    except YAMLError:
        return version.text
    writer = YAML(typ="safe", pure=True)
    writer.default_flow_style = False
    writer.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    out = io.StringIO()
    writer.dump(_without_empties(doc), out)
    return out.getvalue()
