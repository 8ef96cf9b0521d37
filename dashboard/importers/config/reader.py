"""The entry point: queues.yaml or its ConfigMap text -> a validated ConfigImport."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dashboard.importers.config.configmap import _is_configmap, _unwrap_configmap
from dashboard.importers.config.decoding import _SCHEDULER_CONFIG, _decode_struct, _fail
from dashboard.importers.config.diff import ConfigChange, diff_partitions
from dashboard.importers.config.partitions import _partition
from dashboard.importers.config.specs import (
    DEFAULT_PARTITION,
    MAX_CONFIG_BYTES,
    PartitionSpec,
    QueueSpec,
)
from dashboard.importers.errors import ImportFailure, line_location
from dashboard.importers.yamlnodes import YMap, YNode, YSeq, kind_name, load_nodes


@dataclass(frozen=True)
class ConfigImport:
    """A parsed and validated queue config.

    ``text`` is the queues.yaml text (for a ConfigMap, its ``queues.yaml``
    entry) and ``checksum`` the scheduler's upper-case SHA-256 of it; ``extra``
    holds the ConfigMap's other settings (``log.level`` ...).  A config read from
    the scheduler's ``/ws/v1/config`` (:mod:`dashboard.importers.config.answer`)
    has ``source_format`` ``scheduler``.
    """

    partitions: tuple[PartitionSpec, ...]
    warnings: tuple[str, ...]
    text: str
    checksum: str
    extra: dict[str, str]
    source_format: Literal["queues.yaml", "configmap", "scheduler"] = "queues.yaml"
    filename: str = "queues.yaml"
    configmap: dict[str, Any] | None = None

    def partition(self, name: str = DEFAULT_PARTITION) -> PartitionSpec:
        """The partition called *name*; raises ``KeyError`` if there is none."""
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)

    def queue(self, path: str, partition: str = DEFAULT_PARTITION) -> QueueSpec | None:
        """A queue by full path in a partition (``None`` when absent)."""
        return self.partition(partition).queue(path)

    def diff(self, other: ConfigImport | Sequence[PartitionSpec]) -> list[ConfigChange]:
        """Changes from this config (old) to *other* (new), ordered by partition, queue, field."""
        new_parts = other.partitions if isinstance(other, ConfigImport) else tuple(other)
        return diff_partitions(self.partitions, new_parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partitions": [p.to_dict() for p in self.partitions],
            "warnings": list(self.warnings),
            "checksum": self.checksum,
            "extra": dict(self.extra),
            "source_format": self.source_format,
            "filename": self.filename,
            "configmap": self.configmap,
        }


def config_checksum(text: str) -> str:
    """The scheduler's checksum: upper-case SHA-256 of the text without a checksum line.

    Mirrors ``GetConfigurationString``: a ``checksum:`` line in the first or last
    80 bytes is cut out (with what precedes ``partitions:`` or follows the line).
    """
    data = text.encode("utf-8")
    window = 80
    key = b"checksum:"
    idx = data[:window].find(key)
    if idx == -1:
        tail = max(len(data) - window, 0)
        found = data[tail:].find(key)
        idx = tail + found if found != -1 else -1
    if idx != -1:
        start = data.find(b"partitions:")
        if start == -1:
            data = b""
        elif idx < start:
            data = data[start:]
        else:
            data = data[:idx]
    return hashlib.sha256(data).hexdigest().upper()


def _decode_text(data: bytes | str, filename: str) -> str:
    if isinstance(data, str):
        if len(data) > MAX_CONFIG_BYTES:
            raise ImportFailure(
                f"the config is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB", filename
            )
        data = data.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_CONFIG_BYTES:
        raise ImportFailure(
            f"the config is {len(data)} bytes, larger than the {MAX_CONFIG_BYTES // (1024 * 1024)} "
            "MiB limit",
            filename,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailure(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the "
            "file as UTF-8",
            line_location(line),
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


class TooManyConfigQueues(ImportFailure):
    """A config with more queues than an upload may hold (the API answers 413)."""

    def __init__(self, count: int, limit: int, name: str) -> None:
        super().__init__(
            f"the config holds at least {count} queues, more than the limit of {limit} "
            "queues a config or snapshot may hold (DASHBOARD_MAX_SNAPSHOT_QUEUES)",
            name,
        )
        self.count = count
        self.limit = limit


def check_config_queue_count(node: YNode | None, limit: int, filename: str) -> None:
    """Refuse a config whose YAML holds more than *limit* queues (every mapping in a
    ``queues:`` list, each partition's root included), counted on the YAML nodes before
    anything is decoded or validated; stops counting once past the limit."""
    count = 0
    stack: list[YNode] = [node] if node is not None else []
    while stack:
        value = stack.pop()
        if isinstance(value, YSeq):
            stack.extend(value.items)
        elif isinstance(value, YMap):
            for key, child in value.pairs:
                if key.text.lower() == "queues" and isinstance(child, YSeq):
                    count += sum(1 for item in child.items if isinstance(item, YMap))
                    if count > limit:
                        raise TooManyConfigQueues(count, limit, filename)
                if isinstance(child, YMap | YSeq):
                    stack.append(child)


def parse_config(
    data: bytes | str, *, filename: str = "queues.yaml", max_queues: int | None = None
) -> ConfigImport:
    """Read and validate a YuniKorn queue config (queues.yaml or its ConfigMap).

    Args:
        data: the file content; capped at :data:`MAX_CONFIG_BYTES` before parsing.
        filename: used in messages and kept on the result.
        max_queues: the most queues accepted (uploads: ``DASHBOARD_MAX_SNAPSHOT_QUEUES``,
            the snapshots' limit), counted before the queues are decoded.

    Returns:
        The partitions (queue names lower-cased), warnings, the queues.yaml
        text and its checksum, and the ConfigMap's other settings.  The
        quota-change seed's rule (max above guaranteed when a delay is set), which
        the scheduler does not enforce, is one of the warnings
        (:mod:`dashboard.importers.quota_rule`).

    Raises:
        ImportFailure: naming the line, for anything the scheduler would refuse;
            TooManyConfigQueues above *max_queues*.
    """
    text = _decode_text(data, filename)
    warnings: list[str] = []
    node = load_nodes(text)
    source: Literal["queues.yaml", "configmap"] = "queues.yaml"
    extra: dict[str, str] = {}
    meta: dict[str, Any] | None = None
    if _is_configmap(node):
        assert isinstance(node, YMap)
        text, offset, extra, meta = _unwrap_configmap(node, warnings)
        source = "configmap"
        node = load_nodes(text, line_offset=offset)
    if max_queues is not None:
        check_config_queue_count(node, max_queues, filename)
    if node is None:
        raise ImportFailure("the config is empty: it defines no partitions", filename)
    if not isinstance(node, YMap):
        raise _fail(
            f"cannot unmarshal {kind_name(node)} into configs.SchedulerConfig (expected a mapping "
            "with partitions:)",
            node.line,
        )
    top = _decode_struct(node, _SCHEDULER_CONFIG)
    assert top is not None
    partitions_raw = [p for p in (top.get("partitions") or []) if p is not None]
    if not partitions_raw:
        raise _fail("the config defines no partitions", top.line)
    seen: dict[str, int] = {}
    partitions = tuple(_partition(p, seen, warnings) for p in partitions_raw)
    return ConfigImport(
        partitions=partitions,
        warnings=tuple(warnings),
        text=text,
        checksum=config_checksum(text),
        extra=extra,
        source_format=source,
        filename=filename,
        configmap=meta,
    )
