"""Source affinity with real processes: two single-process pollers and a beat on Redis.

Each poller consumes the poll queue and its own; the beat sends each source's polls to
one of them, so a source's polls always run in the same process (its memo). When a
poller is killed (no shutdown: its row stays until the TTL passes), the other takes its
sources over; a poller shut down cleanly is forgotten at once.

Needs Redis (``redis_url`` of the shared plugin); skipped without it except with CI=true.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import redis
from sources_helpers import make_handler, rest_server_state, serving
from test_sources_integration import Processes, wait_for

from dashboard import models as dm
from dashboard.sources.models import ClusterSource, SourcePoller

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SOURCES = 4


@pytest.fixture
def urls() -> Iterator[list[str]]:
    """Four fake schedulers (one per source: a source is one cluster's partition)."""
    with ExitStack() as stack:
        found = []
        for _ in range(SOURCES):
            state = rest_server_state()
            state.url = stack.enter_context(serving(make_handler(state)))
            found.append(state.url)
        yield found


@pytest.fixture
def processes(redis_url: str, tmp_path: Path) -> Iterator[Processes]:
    """The test's Celery processes on this xdist worker's Redis database (flushed)."""
    redis.Redis.from_url(redis_url).flushdb()
    procs = Processes(tmp_path, redis_url)
    yield procs
    procs.stop()
    redis.Redis.from_url(redis_url).flushdb()


def poller(processes: Processes, name: str) -> None:
    processes.start(
        "worker",
        "--loglevel=INFO",  # the poll's requests are logged with their URL
        "--pool=prefork",
        "--concurrency=1",
        "--without-gossip",
        "--without-mingle",
        f"--hostname={name}",
    )


def polled_ports(processes: Processes, index: int) -> set[str]:
    """The ports of the schedulers whose polls the process *index* ran."""
    text = processes.procs[index][1].read_text(errors="replace")
    return set(re.findall(r"GET http://127\.0\.0\.1:(\d+)/ws/v1/partitions\b", text))


def test_each_sources_polls_run_on_one_poller_and_a_killed_pollers_sources_move(
    urls: list[str], processes: Processes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the TTL short, to keep the test short (the default is 20 s); ticks every second
    monkeypatch.setenv("SOURCES_POLLER_TTL_SECONDS", "6")
    poller(processes, "pa@test")
    poller(processes, "pb@test")
    wait_for(lambda: SourcePoller.objects.count() == 2, 120, "both pollers", processes)
    sources = [
        ClusterSource.objects.create(
            name=f"s{i}",
            base_url=url,
            poll_interval=5,
            cluster=dm.Cluster.objects.create(name=f"c{i}"),
        )
        for i, url in enumerate(urls)
    ]
    processes.beat()

    def ports_of(name: str) -> set[str]:
        return {
            s.base_url.rsplit(":", 1)[1]
            for s in ClusterSource.objects.filter(pk__in=[x.pk for x in sources])
            if s.sent_to == name
        }

    # every source polled at least three times
    wait_for(
        lambda: all(
            s.last_poll_at is not None and s.sent_to
            for s in ClusterSource.objects.filter(pk__in=[x.pk for x in sources])
        ),
        120,
        "every source polled",
        processes,
    )
    first = {s.pk: s.last_poll_at for s in ClusterSource.objects.all()}
    wait_for(
        lambda: all(
            s.last_poll_at is not None and s.last_poll_at > (first[s.pk] or s.last_poll_at)
            for s in ClusterSource.objects.all()
        ),
        60,
        "a second poll of every source",
        processes,
    )
    owned_a, owned_b = ports_of("pa@test"), ports_of("pb@test")
    assert owned_a | owned_b == {u.rsplit(":", 1)[1] for u in urls}
    # each poller ran the polls of its own sources only
    assert polled_ports(processes, 0) == owned_a
    assert polled_ports(processes, 1) == owned_b

    # kill the poller that has sources (no shutdown: its row stays, the TTL tells)
    victim, moved = (0, owned_a) if owned_a else (1, owned_b)
    popen, _ = processes.procs[victim]
    os.killpg(popen.pid, signal.SIGKILL)
    popen.wait(timeout=30)
    processes.procs.pop(victim)  # not "alive" any more, on purpose
    survivor_index = 0  # the pollers were started first; the victim's entry is gone
    survivor_name = "pb@test" if victim == 0 else "pa@test"
    wait_for(
        lambda: (
            moved <= polled_ports(processes, survivor_index)
            and ports_of(survivor_name) == {u.rsplit(":", 1)[1] for u in urls}
        ),
        90,
        "the killed poller's sources polled by the other",
        processes,
    )

    # a poller shut down cleanly is forgotten at once
    popen, _ = processes.procs[survivor_index]
    os.killpg(popen.pid, signal.SIGTERM)
    popen.wait(timeout=60)
    assert not SourcePoller.objects.filter(name=survivor_name).exists()
