"""The yunikorn-configs ConfigMap around a queues.yaml."""

from __future__ import annotations

from typing import Any

from dashboard.importers.config.decoding import _fail
from dashboard.importers.yamlnodes import YMap, YNode, YScalar


def _is_configmap(node: YNode | None) -> bool:
    if not isinstance(node, YMap):
        return False
    keys = {k.text for k, _ in node.pairs}
    return "data" in keys and ("kind" in keys or "apiVersion" in keys) and "partitions" not in keys


def _unwrap_configmap(
    node: YMap, warnings: list[str]
) -> tuple[str, int, dict[str, str], dict[str, Any]]:
    """The queues.yaml text, its line offset, the other settings and the metadata."""
    fields = {k.text: (k, v) for k, v in node.pairs}
    kind = fields.get("kind")
    if kind is not None and isinstance(kind[1], YScalar) and kind[1].text != "ConfigMap":
        raise _fail(f"a Kubernetes {kind[1].text}, not a ConfigMap", kind[1].line)
    data_key, data = fields["data"]
    if not isinstance(data, YMap):
        raise _fail("ConfigMap data must be a mapping of file names to text", data.line)
    extra: dict[str, str] = {}
    queues_text: str | None = None
    offset = 0
    for key, value in data.pairs:
        if not isinstance(value, YScalar):
            raise _fail(f"ConfigMap data.{key.text} must be text", value.line)
        if key.text == "queues.yaml":
            queues_text = value.text
            # a literal block starts on the line after its indicator
            offset = value.line if value.style in ("|", ">") else 0
        elif key.text.endswith(".yaml"):
            warnings.append(
                f"line {key.line}: ConfigMap data.{key.text} is ignored (only queues.yaml holds "
                "the queue config of the default policy group)"
            )
        else:
            extra[key.text] = value.text
    if queues_text is None:
        raise _fail("ConfigMap data has no queues.yaml entry", data_key.line)
    meta: dict[str, Any] = {}
    if "metadata" in fields and isinstance(fields["metadata"][1], YMap):
        for k, v in fields["metadata"][1].pairs:
            if isinstance(v, YScalar) and k.text in ("name", "namespace"):
                meta[k.text] = v.text
    return queues_text, offset, extra, meta
