"""Writing back: queue configs as YuniKorn YAML (plain or ConfigMap) and snapshots as scenarios.

:func:`export_config` produces queues.yaml text that :func:`parse_config`
reads back to the same partition specs.  With ``overrides`` (queue path ->
new max) and ``delays`` (queue path -> new quota preemption delay, written as
the queue's own ``quota.preemption.delay`` property) it produces "the config
with the lowered quota": from a
:class:`ConfigImport` the original text is edited in place with ruamel.yaml's
round-trip mode, so comments, order and the other queues stay exactly as the
administrator wrote them; from bare :class:`PartitionSpec` objects the YAML is
generated from their ``raw`` form.  Either way the result is parsed again, so
an override the scheduler would refuse (a parent max below a child's max)
raises :class:`ImportFailure`, and so does one that breaks the quota-change
design's rule where the change sets a max or delay (a max at or below guaranteed
with a delay in force, :mod:`dashboard.importers.quota_rule`); the same case
already in the config the cluster runs is only warned about on import.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import LiteralScalarString
from ruamel.yaml.util import load_yaml_guess_indent

from dashboard.importers import quota_rule
from dashboard.importers.config.reader import ConfigImport, parse_config
from dashboard.importers.config.specs import (
    DEFAULT_PARTITION,
    QUOTA_DELAY,
    ROOT,
    PartitionSpec,
    QueueSpec,
)
from dashboard.importers.errors import ImportFailure
from dashboard.importers.quantities import (
    DelayRangeError,
    QuantityError,
    check_delay_seconds,
    format_quantity,
    parse_quantity,
    short_duration,
)
from engine.errors import ScenarioError
from engine.scenario import parse_scenario

Overrides = Mapping[str, Mapping[str, int] | None]
Delays = Mapping[str, float]
#: Queue path -> the validated Go duration text of its new delay.
DelayTexts = Mapping[str, str]

# Go field order of configs.QueueConfig, children last for readability
_QUEUE_ORDER = (
    "name",
    "parent",
    "resources",
    "maxapplications",
    "properties",
    "adminacl",
    "submitacl",
    "childtemplate",
    "limits",
)
_PARTITION_ORDER = (
    "name",
    "preemption",
    "nodesortpolicy",
    "usergroupresolver",
    "placementrules",
    "limits",
)


def _yaml_value(text: str) -> Any:
    # whole numbers as YAML ints (no quotes); the scheduler reads either as the same string
    return int(text) if text.isdigit() else text


def _format_max(new_max: Mapping[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t, q in new_max.items():
        try:
            out[t] = _yaml_value(format_quantity(q, t))
        except QuantityError as exc:
            raise ImportFailure(str(exc), "overrides") from None
    return out


def _delay_text(seconds: float, path: str) -> str:
    """*seconds* as the Go duration the scheduler parses back to the same nanoseconds."""
    try:
        checked = check_delay_seconds(seconds)
    except DelayRangeError as exc:
        raise ImportFailure(f"the delay of {path!r}: {exc}", "delays") from None
    return short_duration(checked)


def _check_overrides(
    partitions: Sequence[PartitionSpec], partition: str, overrides: Overrides
) -> None:
    target = next((p for p in partitions if p.name == partition), None)
    if target is None and overrides:
        raise ImportFailure(f"no partition {partition!r} in the config", "overrides")
    for path in overrides:
        if target is None or target.queue(path) is None:
            raise ImportFailure(f"unknown queue {path!r} in partition {partition!r}", "overrides")
        if path.lower() == ROOT and overrides[path] is not None:
            raise ImportFailure("the root queue must not have resource limits", "overrides")


def _delay_texts(
    partitions: Sequence[PartitionSpec], partition: str, delays: Delays
) -> dict[str, str]:
    """*delays* checked against the config and written as Go durations, once."""
    target = next((p for p in partitions if p.name == partition), None)
    if target is None and delays:
        raise ImportFailure(f"no partition {partition!r} in the config", "delays")
    out: dict[str, str] = {}
    for path, seconds in delays.items():
        if target is None or target.queue(path) is None:
            raise ImportFailure(f"unknown queue {path!r} in partition {partition!r}", "delays")
        out[path] = _delay_text(seconds, path)
    return out


def export_config(
    config: ConfigImport | Sequence[PartitionSpec],
    *,
    overrides: Overrides | None = None,
    partition: str = DEFAULT_PARTITION,
    delays: Delays | None = None,
) -> str:
    """queues.yaml text for *config*, with the max (and delay) of some queues replaced.

    Args:
        config: an imported config (its text is edited, comments kept) or partitions.
        overrides: queue path -> new max in scheduler units (``None`` removes the max),
            applied in *partition*.
        partition: the partition the overrides and delays refer to.
        delays: queue path -> new quota preemption delay in seconds, written as the
            queue's own ``quota.preemption.delay`` property (a Go duration such as
            ``10m``); its children inherit it unless they set their own.

    Raises:
        ImportFailure: for an unknown queue, or when the result is a config the
            scheduler would refuse, or one where a queue whose max or delay this
            call changes breaks the quota-change design's rule.
    """
    overrides = {k.lower(): v for k, v in (overrides or {}).items()}
    lowered = {k.lower(): v for k, v in (delays or {}).items()}
    if isinstance(config, ConfigImport):
        _check_overrides(config.partitions, partition, overrides)
        texts = _delay_texts(config.partitions, partition, lowered)
        text = (
            _edit_text(config.text, overrides, partition, texts)
            if overrides or texts
            else config.text
        )
    else:
        parts = tuple(config)
        _check_overrides(parts, partition, overrides)
        texts = _delay_texts(parts, partition, lowered)
        text = _generate(parts, overrides, partition, texts)
    try:
        again = parse_config(text, filename="exported queues.yaml")  # what the scheduler refuses
    except ImportFailure as exc:
        raise ImportFailure(
            f"the resulting config would be refused: {exc.message}", "overrides"
        ) from None
    # the quota-change design's rule, for what this change sets (not what the cluster runs)
    before = config.partitions if isinstance(config, ConfigImport) else tuple(config)
    old = next((p for p in before if p.name == partition), None)
    new = next((p for p in again.partitions if p.name == partition), None)
    if new is not None:
        found = quota_rule.new_findings(old.queues() if old is not None else (), new.queues())
        if found:
            raise ImportFailure(
                f"the resulting config would be refused: {found[0].refusal()}",
                "overrides" if found[0].queue in overrides or not lowered else "delays",
            )
    return text


def export_configmap(
    config: ConfigImport | Sequence[PartitionSpec],
    *,
    overrides: Overrides | None = None,
    partition: str = DEFAULT_PARTITION,
    name: str | None = None,
    namespace: str | None = None,
    extra: Mapping[str, str] | None = None,
    delays: Delays | None = None,
) -> str:
    """The Kubernetes ConfigMap form: ``data.queues.yaml`` plus the other settings.

    Name, namespace and settings default to those of an imported ConfigMap,
    else ``yunikorn-configs`` in ``yunikorn``.
    """
    queues_yaml = export_config(config, overrides=overrides, partition=partition, delays=delays)
    return configmap_of(config, queues_yaml, name=name, namespace=namespace, extra=extra)


def configmap_of(
    config: ConfigImport | Sequence[PartitionSpec],
    queues_yaml: str,
    *,
    name: str | None = None,
    namespace: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """The ConfigMap holding *queues_yaml* (already exported from *config*).

    Metadata and settings as in :func:`export_configmap`; for a caller that needs both
    the queues.yaml text and the ConfigMap without exporting the config twice.
    """
    meta: Mapping[str, Any] = {}
    settings: Mapping[str, str] = {}
    if isinstance(config, ConfigImport):
        meta = config.configmap or {}
        settings = config.extra
    if extra is not None:
        settings = extra
    doc = CommentedMap()
    doc["apiVersion"] = "v1"
    doc["kind"] = "ConfigMap"
    doc["metadata"] = CommentedMap(
        [
            ("name", name or meta.get("name") or "yunikorn-configs"),
            ("namespace", namespace or meta.get("namespace") or "yunikorn"),
        ]
    )
    data = CommentedMap()
    for k in sorted(settings):
        if k == "queues.yaml":
            continue
        data[k] = str(settings[k])
    data["queues.yaml"] = LiteralScalarString(queues_yaml)
    doc["data"] = data
    out = io.StringIO()
    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.dump(doc, out)
    return out.getvalue()


# ------------------------------------------------------------------ editing text


def kubectl_patch_command(name: str, namespace: str, queues_yaml: str) -> str:
    """The shell command that writes *queues_yaml* into the ConfigMap (other keys kept).

    A JSON merge patch of ``data["queues.yaml"]``; ``shlex.split`` of the command
    gives back the JSON body unchanged.
    """
    body = json.dumps(
        {"data": {"queues.yaml": queues_yaml}}, separators=(",", ":"), ensure_ascii=True
    )
    return shlex.join(
        ["kubectl", "patch", "configmap", name, "-n", namespace, "--type", "merge", "-p", body]
    )


def _edit_text(text: str, overrides: Overrides, partition: str, delays: DelayTexts) -> str:
    _, seq_indent, block_seq_indent = load_yaml_guess_indent(text)
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    doc = yaml.load(text)  # the text was validated by parse_config: no aliases, bounded size
    parts = doc.get("partitions") or []
    target = None
    for p in parts:
        pname = str(p.get("name") or "")
        if pname == "" or pname.lower() == DEFAULT_PARTITION:
            pname = DEFAULT_PARTITION
        if pname == partition:
            target = p
            break
    if target is None:
        raise ImportFailure(f"no partition {partition!r} in the config", "overrides")
    for path, new_max in overrides.items():
        _set_max(_queue_in(target, path, "overrides"), new_max)
    for path, delay in delays.items():
        _set_property(_queue_in(target, path, "delays"), QUOTA_DELAY, delay)
    offset = block_seq_indent or 0
    yaml.indent(mapping=_mapping_indent(text), sequence=seq_indent or 2, offset=offset)
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def _mapping_indent(text: str) -> int:
    """The indentation step of nested mappings in *text* (2 when it cannot be seen)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for a, b in itertools.pairwise(lines):
        if a.rstrip().endswith(":") and not a.lstrip().startswith("- "):
            ia, ib = len(a) - len(a.lstrip()), len(b) - len(b.lstrip())
            if ib > ia and not b.lstrip().startswith("- "):
                return ib - ia
    return 2


def _queue_in(partition: Any, path: str, location: str) -> Any:
    """The queue at *path* in a round-trip partition mapping; unknown is an error."""
    queue = _find_queue(partition.get("queues") or [], path)
    if queue is None:
        raise ImportFailure(f"unknown queue {path!r}", location)
    return queue


def _find_queue(top: list[Any], path: str) -> Any:
    parts = path.split(".")
    if len(top) == 1 and str(top[0].get("name") or "").lower() == ROOT:
        level: list[Any] = [top[0]]
    else:
        if parts[0] != ROOT:
            return None
        level = top
        parts = parts[1:]
        if not parts:
            return None  # an implicit root has nothing to edit
    found = None
    for part in parts:
        found = next((q for q in level if str(q.get("name") or "").lower() == part), None)
        if found is None:
            return None
        level = found.get("queues") or []
    return found


def _set_max(queue: Any, new_max: Mapping[str, int] | None) -> None:
    resources = queue.get("resources")
    if new_max is None:
        if resources is not None and "max" in resources:
            del resources["max"]
            if not resources:
                del queue["resources"]
        return
    values = _format_max(new_max)
    if resources is None:
        resources = CommentedMap()
        queue.insert(_insert_position(queue), "resources", resources)
    current = resources.get("max")
    if current is None:
        current = CommentedMap()
        current.fa.set_flow_style()
        resources["max"] = current
    for t in list(current):
        if t not in values:
            del current[t]
    for t, v in values.items():
        current[t] = v


def _set_property(queue: Any, key: str, value: str) -> None:
    """Set one of the queue's own properties, adding ``properties:`` where it has none."""
    properties = queue.get("properties")
    if properties is None:
        properties = CommentedMap()
        keys = list(queue)
        # in Go field order: after name, parent, resources and maxapplications
        after = [k for k in keys if k in ("name", "parent", "resources", "maxapplications")]
        position = keys.index(after[-1]) + 1 if after else 0
        queue.insert(position, "properties", properties)
    properties[key] = value


def _insert_position(queue: Any) -> int:
    keys = list(queue)
    for i, k in enumerate(keys):
        if k not in ("name", "parent"):
            return i
    return len(keys)


# ------------------------------------------------------------------ generating text


def _resource_text(
    raw: Mapping[str, str] | None, spec: dict[str, int] | None
) -> dict[str, Any] | None:
    """The raw strings when they still mean *spec*, else *spec* written canonically."""
    if raw is not None:
        try:
            parsed = {t: parse_quantity(v, t) for t, v in raw.items()}
        except QuantityError:
            parsed = None
        if parsed is not None:
            normal = None if not parsed or all(q == 0 for q in parsed.values()) else parsed
            if normal == spec:
                return dict(raw)
    if spec is None:
        return None
    return _format_max(spec)


def _queue_dict(
    spec: QueueSpec, overrides: Overrides, apply: bool, delays: DelayTexts
) -> dict[str, Any]:
    raw = spec.raw
    out: dict[str, Any] = {}
    raw_name = raw.get("name")
    out["name"] = (
        raw_name if isinstance(raw_name, str) and raw_name.lower() == spec.name else spec.name
    )
    if spec.parent is not None and spec.path != ROOT:
        out["parent"] = spec.parent
    new_max = spec.max
    if apply and spec.path in overrides:
        new_max = None if overrides[spec.path] is None else dict(overrides[spec.path] or {})
    raw_res = raw.get("resources") or {}
    resources: dict[str, Any] = {}
    g = _resource_text(raw_res.get("guaranteed"), spec.guaranteed)
    m = _resource_text(raw_res.get("max"), new_max)
    if g is not None:
        resources["guaranteed"] = g
    if m is not None:
        resources["max"] = m
    if resources:
        out["resources"] = resources
    if spec.max_applications:
        out["maxapplications"] = spec.max_applications
    properties = dict(spec.properties or {})
    if apply and spec.path in delays:
        properties[QUOTA_DELAY] = delays[spec.path]
    if properties:
        out["properties"] = properties
    for key in ("adminacl", "submitacl", "limits"):
        if raw.get(key) not in (None, "", []):
            out[key] = copy.deepcopy(raw[key])
    template = raw.get("childtemplate")
    if template:
        out["childtemplate"] = copy.deepcopy(template)
    if spec.children:
        out["queues"] = [_queue_dict(c, overrides, apply, delays) for c in spec.children]
    return {k: out[k] for k in (*_QUEUE_ORDER, "queues") if k in out}


def _generate(
    parts: Sequence[PartitionSpec], overrides: Overrides, partition: str, delays: DelayTexts
) -> str:
    doc: dict[str, Any] = {"partitions": []}
    for p in parts:
        raw = {k: copy.deepcopy(v) for k, v in p.raw.items() if k != "queues"}
        raw["name"] = p.name
        preemption = dict(raw.get("preemption") or {})
        if p.quota_preemption_enabled or "quotapreemptionenabled" in preemption:
            preemption["quotapreemptionenabled"] = p.quota_preemption_enabled
        if not p.preemption_enabled or "enabled" in preemption:
            preemption["enabled"] = p.preemption_enabled
        order = ("enabled", "quotapreemptionenabled")
        if preemption:
            raw["preemption"] = {k: preemption[k] for k in order if k in preemption}
        if p.placement_rules:
            raw["placementrules"] = copy.deepcopy(p.placement_rules)
        ordered = {k: raw[k] for k in _PARTITION_ORDER if k in raw}
        ordered["queues"] = [_queue_dict(p.root, overrides, p.name == partition, delays)]
        doc["partitions"].append(ordered)
    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(_commented(doc, ""), out)
    return out.getvalue()


_FLOW_KEYS = frozenset({"guaranteed", "max", "maxresources", "resourceweights"})


def _commented(value: Any, key: str) -> Any:
    """Plain data -> ruamel round-trip objects; resource maps in flow style, whole numbers bare."""
    if isinstance(value, dict):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _commented(v, k)
        if key in _FLOW_KEYS:
            out.fa.set_flow_style()
            for k, v in list(out.items()):
                if isinstance(v, str):
                    out[k] = _yaml_value(v)
        return out
    if isinstance(value, list):
        return [_commented(v, "") for v in value]
    return value


# ------------------------------------------------------------------ scenarios


def scenario_json(
    snapshot_scenario: Mapping[str, Any], request: Mapping[str, Any]
) -> dict[str, Any]:
    """A complete scenario document: the snapshot's cluster plus *request*, validated.

    Raises:
        ImportFailure: naming the field when the engine would refuse the result
            (for example a request for an unknown queue).
    """
    doc = copy.deepcopy(dict(snapshot_scenario))
    doc["request"] = copy.deepcopy(dict(request))
    try:
        parse_scenario(doc, default_now=0.0)
    except ScenarioError as exc:
        raise ImportFailure(exc.message, exc.field) from None
    return doc
