"""The partition's quota preemption flag and the cluster's id, from partitions.json
and the scheduler's config (REST or in a state dump)."""

from __future__ import annotations

from dashboard.importers.snapshot.access import Reader
from dashboard.importers.snapshot.statedump import _Sources


def _cluster_id(src: _Sources) -> str | None:
    if src.partitions is None:
        return None
    for p in src.partitions[2]:
        if isinstance(p, dict) and isinstance(p.get("clusterId"), str):
            return str(p["clusterId"])
    return None


def _partition_flag(src: _Sources, partition: str) -> bool:
    found: list[tuple[str, bool]] = []
    if src.partitions is not None:
        file, base, items = src.partitions
        r = Reader(file)
        for i, p in enumerate(items):
            p = r.obj(p, f"{base}[{i}]")
            if (p.get("name") or "default") == partition:
                found.append((file, r.flag(p, "quotaPreemptionEnabled", f"{base}[{i}]")))
    if src.config is not None:
        file, base, conf = src.config
        r = Reader(file)
        pre = f"{base}." if base else ""
        for i, p in enumerate(r.arr(conf.get("Partitions") or [], f"{pre}Partitions")):
            p = r.obj(p, f"{pre}Partitions[{i}]")
            name = p.get("Name") or "default"
            if isinstance(name, str) and (name.lower() == partition.lower()):
                pre_obj = r.obj(p.get("Preemption") or {}, f"{pre}Partitions[{i}].Preemption")
                found.append(
                    (
                        file,
                        r.flag(
                            pre_obj, "QuotaPreemptionEnabled", f"{pre}Partitions[{i}].Preemption"
                        ),
                    )
                )
    if not found:
        src.warnings.append(
            "no partitions.json or config.json: the partition's quotapreemptionenabled flag is "
            "unknown and imported as false (quota preemption disabled)"
        )
        return False
    values = {v for _, v in found}
    if len(values) > 1:
        src.warnings.append(
            "the quota preemption flag disagrees between "
            + ", ".join(f"{f} ({v})" for f, v in found)
            + f"; using {found[0][1]} from {found[0][0]}"
        )
    return found[0][1]
