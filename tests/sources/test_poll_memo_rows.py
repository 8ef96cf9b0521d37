"""A poller reads again only the node objects that changed since its last poll, and
stores exactly the rows an upload of the same answers stores."""

from __future__ import annotations

from collections import OrderedDict
from datetime import timedelta
from typing import Any

import pytest
from sources_helpers import T0, snapshot_rows
from support.benchmarks import benchmark_module

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import poll as poll_module
from dashboard.sources import services
from dashboard.sources.client import FetchError, FetchResult
from dashboard.sources.models import ClusterSource
from engine.model import Allocation

pytestmark = pytest.mark.django_db


def _bench() -> Any:
    return benchmark_module("import_rest")


def test_polls_of_a_changing_cluster_store_the_rows_of_an_upload() -> None:
    """Four polls, each with some pods replaced: each stored snapshot (its checksum too)
    equals an upload of the same answers, and the later polls took most nodes and their
    allocations' checksum texts from what the poll before read."""
    bench = _bench()
    files = bench.build_answers(30, 4)
    source = ClusterSource.objects.create(name="memo", base_url="http://127.0.0.1:9")
    current = {"files": files}

    def fetch(_source: ClusterSource) -> FetchResult:
        return FetchResult(files=dict(current["files"]))

    def nothing(*_args: Any) -> bytes:
        raise FetchError("events", "not served here")

    polled: list[tuple[int, dict[str, bytes]]] = []
    for generation in range(4):
        if generation:
            current["files"] = bench.replace_pods(current["files"], 0.05, generation)
        outcome = services.poll_source(
            source.pk,
            now=T0 + timedelta(minutes=generation),
            force=True,
            fetch=fetch,
            events=nothing,
            config=nothing,
        )
        assert outcome.status == "stored"
        assert outcome.snapshot_id is not None
        polled.append((outcome.snapshot_id, current["files"]))
        if generation:
            memo, texts = poll_module._memos[source.pk]
            assert memo.reused > 15  # node objects taken from the last parse
            assert texts.reused > 60  # their allocations' checksum texts too
    for snapshot_id, answers in polled:
        uploaded = platform.import_snapshot(answers, partition="default", now=T0)
        assert snapshot_rows(dm.ClusterSnapshot.objects.get(pk=snapshot_id)) == snapshot_rows(
            uploaded
        )


def test_a_process_forgets_the_reads_of_the_sources_polled_longest_ago(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At most MEMO_SOURCES sources' reads are kept, and together at most MEMO_ALLOCATIONS
    allocations: the sources polled longest ago are forgotten first, never the one
    polled now."""
    monkeypatch.setattr(poll_module, "_memos", OrderedDict())
    monkeypatch.setattr(poll_module, "MEMO_SOURCES", 2)
    for source_id in (1, 2, 3):
        poll_module._kept(source_id)
    assert list(poll_module._memos) == [2, 3]
    texts = poll_module._kept(2)[1]
    allocation = Allocation("a", "root.a", "n1", {"vcore": 1})
    texts.known = {i: (allocation, "{}", None) for i in range(10)}
    monkeypatch.setattr(poll_module, "MEMO_ALLOCATIONS", 5)
    poll_module._kept(3)
    assert list(poll_module._memos) == [3]
    poll_module._kept(3)[1].known = dict(texts.known)
    poll_module._kept(3)
    assert list(poll_module._memos) == [3]  # over the bound alone: kept all the same
