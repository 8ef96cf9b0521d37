"""Several replicas on one PostgreSQL and one Redis, as the manifests run them: two web
processes, two workers, one poller and one beat, all started by ``entrypoint.sh``.

The test talks to them over HTTP only (an API token, a session), as an operator would:
a due quota change fires exactly once; a what-if answers while a cluster source
trickles its answer (polls have a queue and worker of their own and an overall
deadline); both web processes show the same data.
"""

from __future__ import annotations

import re
import select
import socket
import time
from collections.abc import Iterator

import pytest
import scenarios
from deploy_support import (
    Api,
    Deployment,
    LoopbackServer,
    due_quota_change,
    request,
    sign_in,
    staff_token,
)
from support.processes import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

POLL_DEADLINE = 8  # seconds (SOURCES_POLL_DEADLINE_SECONDS of the processes)
TRICKLE_EVERY = 2  # seconds between the bytes of the slow scheduler


class TrickleServer(LoopbackServer):
    """Answers every request with headers promising a large body, then one byte every
    TRICKLE_EVERY seconds: each wait for bytes is short, the answer never completes."""

    def __init__(self) -> None:
        self.connections: list[tuple[float, float | None]] = []  # (opened, closed) monotonic
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with self.lock:
            index = len(self.connections)
            self.connections.append((time.monotonic(), None))
        try:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\n\r\n"
            )
            while not self.stopped.is_set():
                conn.sendall(b" ")
                # wait for the next byte's time, noticing at once when the client hangs up
                readable, _, _ = select.select([conn], [], [], TRICKLE_EVERY)
                if readable and not conn.recv(1):
                    break
        except OSError:
            pass  # the client gave up: what the test waits for
        finally:
            conn.close()
            with self.lock:
                self.connections[index] = (self.connections[index][0], time.monotonic())

    def open_count(self) -> int:
        with self.lock:
            return sum(1 for _, closed in self.connections if closed is None)

    def closed_durations(self) -> list[float]:
        with self.lock:
            return [closed - opened for opened, closed in self.connections if closed is not None]


@pytest.fixture
def trickle() -> Iterator[TrickleServer]:
    server = TrickleServer()
    yield server
    server.stop()


def _session(port: int) -> str:
    """A session cookie from the login form of the web process on *port*."""
    session = re.search(r"sessionid=[^;]+", sign_in(port).headers["set-cookie"])
    assert session is not None
    return session.group(0)


def _without_tokens(html: bytes) -> bytes:
    """A page without what differs per response (CSRF tokens)."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", html)


def test_two_webs_two_workers_a_poller_and_beat_on_one_database(
    postgres_deployment: Deployment, trickle: TrickleServer
) -> None:
    deployment = postgres_deployment
    deployment.env.update(
        {
            "DASHBOARD_SWEEP_SECONDS": "1",
            "SOURCES_BEAT_SECONDS": "2",
            "SOURCES_POLL_DEADLINE_SECONDS": str(POLL_DEADLINE),
            "SOURCES_HTTP_TIMEOUT": "5",
            "SOURCES_HTTP_RETRIES": "0",
            "CELERY_CONCURRENCY": "1",
            "CELERY_POLL_CONCURRENCY": "1",
            "GUNICORN_WORKERS": "1",
            "DASHBOARD_WARM_UP_TASKS": "0",
        }
    )
    token = staff_token(deployment)
    (_, port_a), (_, port_b) = deployment.web(), deployment.web()
    a, b = Api(port_a, token), Api(port_b, token)
    workers = [deployment.celery("worker"), deployment.celery("worker")]
    poller = deployment.celery("poller")
    beat = deployment.celery("beat")

    snapshot = a.post("/api/snapshots/", scenarios.small_scenario(round_request=True))

    # a slow scheduler: its polls go to the poller, each cut at the deadline
    source = b.post(
        "/api/sources/",
        {"name": "slow", "base_url": f"http://127.0.0.1:{trickle.port}", "poll_interval": 5},
    )
    wait_until(lambda: trickle.open_count() > 0, 60, "the poller to reach the slow scheduler")

    # a what-if sent to one web process, answered by a worker, read from the other
    run = b.post("/api/whatif/preempt/", {"snapshot": snapshot["id"], "ask_key": "ask-1"})
    wait_until(
        lambda: a.get(f"/api/runs/{run['id']}/")["status"] == "done", 90, "the what-if's answer"
    )
    assert a.get(f"/api/runs/{run['id']}/")["outcome"] == "preempted"

    # the slow poll failed at its deadline, naming it, and freed its worker
    def failed_at_deadline() -> bool:
        return (
            "SOURCES_POLL_DEADLINE_SECONDS" in a.get(f"/api/sources/{source['id']}/")["last_error"]
        )

    wait_until(failed_at_deadline, 120, "the slow poll to fail at its deadline")
    wait_until(lambda: len(trickle.closed_durations()) >= 2, 120, "a second poll to end too")
    durations = trickle.closed_durations()
    print(f"slow polls held their connection for {[round(d, 1) for d in durations]} s")
    # bounded by the deadline plus one trickle interval and a margin for a loaded machine
    assert all(d < POLL_DEADLINE + TRICKLE_EVERY + 10 for d in durations), durations
    # polls ran on the poller only; the workers never took one
    assert "dashboard.poll_cluster_source[" in poller.text()
    for worker in workers:
        assert "dashboard.poll_cluster_source[" not in worker.text()
        assert "dashboard.poll_cluster_source" in worker.text()  # listed, never received

    # a due quota change fires exactly once with two workers and two webs; root.a has no
    # max yet: rule set seed starts a timer for a newly set max (the scheduler's, none)
    change = due_quota_change(a)
    wait_until(
        lambda: b.get(f"/api/quota-changes/{change['id']}/")["state"] == "fired",
        120,
        "the change to fire",
    )
    sweeps = beat.text().count("sweep quota changes")
    wait_until(
        lambda: beat.text().count("sweep quota changes") >= sweeps + 5, 60, "five more sweeps"
    )
    for api in (a, b):
        runs = api.get("/api/runs/?kind=quota_enforcement")["results"]
        assert [(r["trigger"], r["status"]) for r in runs] == [("timer", "done")]

    # both web processes answer the same data, pages included (one session for both);
    # the slow source still polls every few seconds and each failure updates its row,
    # so the two answers are compared when no poll ended between them
    for path in ("/api/quota-changes/", "/api/runs/", "/api/snapshots/", "/api/alerts/"):

        def answers_alike(path: str = path) -> bool:
            return bool(a.get(path) == b.get(path))

        wait_until(answers_alike, 60, f"{path} alike from both web processes")
    session = _session(port_a)
    for path in ("/queues/", "/changes/", "/history/"):

        def alike(path: str = path) -> bool:
            page_a = request(port_a, path, headers={"Cookie": session})
            page_b = request(port_b, path, headers={"Cookie": session})
            assert (page_a.status, page_b.status) == (200, 200), path
            return _without_tokens(page_a.body) == _without_tokens(page_b.body)

        wait_until(alike, 60, f"{path} alike from both web processes")
