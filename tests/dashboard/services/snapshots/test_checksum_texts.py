"""A poller's checksum with the allocation texts of its last one (AllocationTexts) is the
checksum, with the same span digests, that one without them gives."""

from __future__ import annotations

from dataclasses import replace

from dashboard.services.snapshots.checksum import AllocationTexts, cluster_checksum
from engine.bench import SIZES, generate
from engine.scenario import parse_scenario


def test_texts_kept_from_the_last_checksum_give_the_same_checksum_and_digests() -> None:
    """Three checksums of a changing cluster, gang extras on some allocations: the same
    checksum and digests as without kept texts, and the unchanged allocations' texts
    are taken from the last checksum."""
    cluster = parse_scenario(generate(SIZES["tiny"])).cluster
    rest = {"partition": {"quota_preemption_enabled": True}}
    texts = AllocationTexts()
    allocations = list(cluster.allocations)
    for generation in range(3):
        if generation:
            for i in range(generation, len(allocations), 17):  # some allocations change
                a = allocations[i]
                allocations[i] = replace(a, created=a.created + generation)
        current = replace(cluster, allocations=tuple(allocations))
        extras = {a.key: (True, False, "group") for a in allocations[::23]}
        if generation == 2:
            extras[allocations[0].key] = (False, True, "")  # changed extras, same object
        kept_digests: dict[str, str] = {}
        fresh_digests: dict[str, str] = {}
        texts.reused = 0
        kept = cluster_checksum(rest, current, kept_digests, extras, texts)
        fresh = cluster_checksum(rest, current, fresh_digests, extras)
        assert kept == fresh
        assert kept_digests == fresh_digests
        if generation:
            assert texts.reused > len(allocations) // 2
