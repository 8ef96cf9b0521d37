"""Which of YuniKorn's answers each part of an import is read from: a state dump (with
the events batch beside it, and the config file when the dump holds none) or the
REST files (the queue tree, required; nodes, applications, partitions, config,
events)."""

from __future__ import annotations

from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.access import Reader
from dashboard.importers.snapshot.statedump import _Sources, _statedump_sources


def _yunikorn_sources(
    docs: dict[str, list[tuple[str, Any]]], wanted: str | None, gangless: set[int] | None = None
) -> tuple[_Sources, str]:
    """The sources of an import of YuniKorn's answers, and its partition (*gangless*:
    see :func:`~dashboard.importers.snapshot.applications._drop_unread`)."""
    if len(docs["statedump"]) > 1:
        raise ImportFailure(
            "more than one state dump: " + ", ".join(n for n, _ in docs["statedump"])
        )
    if docs["statedump"]:
        name, doc = docs["statedump"][0]
        src, part = _statedump_sources(name, doc, wanted)
        # the dump holds no events: the scheduler's events batch beside it is still read
        for n, d in docs["events"]:
            src.events = d
            src.events_file = n
            src.files.append(n)
        used = ["statedump", "events"]
        if src.config is None and docs["config"]:  # a dump without its config: the file's
            n, d = docs["config"][0]
            src.config = (n, "", d)
            src.files.append(n)
            used.append("config")
        ignored = [n for s, items in docs.items() if s not in used for n, _ in items]
        if ignored:
            src.warnings.append(
                "the state dump is used; these files were ignored: " + ", ".join(ignored)
            )
    else:
        src = _Sources(kind="rest")
        if not docs["queues"]:
            single = [n for n, _ in docs["queue"]]
            hint = (
                f" ({', '.join(single)} holds a single queue without its subtree)" if single else ""
            )
            raise ImportFailure(
                "a REST snapshot needs the whole queue tree: GET "
                "/ws/v1/partition/{partition}/queues (partition_queues.json), or a state dump"
                + hint
            )
        if len(docs["queues"]) > 1:
            raise ImportFailure(
                "more than one queue tree: " + ", ".join(n for n, _ in docs["queues"])
            )
        qname, qdoc = docs["queues"][0]
        src.tree = (qname, "", qdoc)
        part = Reader(qname).string(qdoc.get("partition"), "partition", required=False) or "default"
        if wanted is not None and wanted != part:
            raise ImportFailure(f"the queue tree is for partition {part!r}, not {wanted!r}", qname)
        src.files.append(qname)
        if len(docs["nodes"]) > 1:
            raise ImportFailure(
                "more than one nodes list: " + ", ".join(n for n, _ in docs["nodes"])
            )
        if docs["nodes"]:
            src.nodes = (docs["nodes"][0][0], "", docs["nodes"][0][1])
            src.files.append(docs["nodes"][0][0])
        for n, d in docs["applications"]:
            src.apps.append((n, "", d))
            src.files.append(n)
        src.gangless = gangless or set()
        if docs["partitions"]:
            n, d = docs["partitions"][0]
            src.partitions = (n, "", d)
            src.files.append(n)
        if docs["config"]:
            n, d = docs["config"][0]
            src.config = (n, "", d)
            src.files.append(n)
        for n, d in docs["events"]:
            src.events = d
            src.events_file = n
            src.files.append(n)
        for n, _ in docs["queue"] + docs["placementrules"] + docs["empty"]:
            src.files.append(n)
        for n, _ in docs["empty"]:
            src.warnings.append(f"{n}: an empty list; nothing taken from it")
        src.warnings.append(
            "REST files carry no allow-preemption flag (only the state dump's shim cache "
            "does): every allocation is imported as allowing preemption"
        )
    return src, part
