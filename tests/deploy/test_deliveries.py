"""Alert deliveries never starve the workers: real processes started by ``entrypoint.sh``
(web, ``worker`` for the default queue, ``deliveries`` for the deliveries queue, beat)
on one PostgreSQL and Redis, six routes to a receiver that accepts connections and
never answers, and a what-if sent after the alerts: the what-if is answered while the
deliveries hang, and each hanging send gives up at the short timeout; then a quota
change fires on time although its own alerts go to the same hanging receiver.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import scenarios
from deploy_support import Api, Deployment, LoopbackServer, due_quota_change, staff_token
from support.processes import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROUTES = 6
HTTP_TIMEOUT = 3  # seconds (ALERT_HTTP_TIMEOUT of the processes)


class SilentReceiver(LoopbackServer):
    """Accepts every connection, reads what comes, never answers; records how long each
    connection stayed open (the sender hung up, or the test ended)."""

    def __init__(self) -> None:
        self.opened: list[float] = []
        self.held: list[float] = []  # seconds each closed connection was held
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        opened = time.monotonic()
        with self.lock:
            self.opened.append(opened)
        conn.settimeout(0.5)
        try:
            while not self.stopped.is_set():
                try:
                    if not conn.recv(65536):
                        break  # the sender gave up
                except TimeoutError:
                    continue
        except OSError:
            pass
        finally:
            conn.close()
            with self.lock:
                self.held.append(time.monotonic() - opened)

    def counts(self) -> tuple[int, int]:
        """(connections made, connections the sender closed)."""
        with self.lock:
            return len(self.opened), len(self.held)


@pytest.fixture
def silent() -> Iterator[SilentReceiver]:
    receiver = SilentReceiver()
    yield receiver
    receiver.stop()


def test_a_receiver_that_never_answers_delays_no_whatif_nor_firing(
    postgres_deployment: Deployment, silent: SilentReceiver
) -> None:
    deployment = postgres_deployment
    deployment.env.update(
        {
            "ALERT_HTTP_TIMEOUT": str(HTTP_TIMEOUT),
            "ALERT_CONNECT_TIMEOUT": "2",
            "ALERT_DELIVERY_BACKOFF_SECONDS": "1",
            "GUNICORN_WORKERS": "1",
            "DASHBOARD_WARM_UP_TASKS": "0",
            "DASHBOARD_SWEEP_SECONDS": "1",
        }
    )
    token = staff_token(deployment)
    _, port = deployment.web()
    api = Api(port, token)
    worker = deployment.celery("worker")
    deliveries = deployment.celery("deliveries")
    assert ".> deliveries " in deliveries.text()
    assert ".> celery " not in deliveries.text()

    for i in range(ROUTES):
        api.post(
            "/api/alert-routes/",
            {
                "name": f"hangs-{i}",
                "channel": "webhook",
                "url": f"http://127.0.0.1:{silent.port}/hook",
                "secret": "s",
                "min_level": "info",
            },
        )
    snapshot = api.post("/api/snapshots/", scenarios.small_scenario(round_request=True))

    # a refused upload: one alert, one delivery per route, all to the silent receiver
    refused = api.call("POST", "/api/snapshots/", {"queues": "not a tree"})
    assert 400 <= refused.status < 500, refused.text()[:300]
    wait_until(lambda: silent.counts()[0] >= 2, 60, "the deliveries worker to reach the receiver")

    started = time.monotonic()
    run = api.post("/api/whatif/preempt/", {"snapshot": snapshot["id"], "ask_key": "ask-1"})
    wait_until(
        lambda: api.get(f"/api/runs/{run['id']}/")["status"] == "done", 60, "the what-if's answer"
    )
    took = time.monotonic() - started
    opened, closed = silent.counts()
    print(f"what-if answered in {took:.1f} s with {opened - closed} deliveries hanging")
    assert api.get(f"/api/runs/{run['id']}/")["outcome"] == "preempted"
    # generous for a loaded machine; sharing the queue it took 6 * the timeout and more
    assert took < 10, f"the what-if took {took:.1f} s behind hanging deliveries"

    # the deliveries ran on their own worker only, each try cut at the short timeout
    assert "dashboard.deliver_alert[" in deliveries.text()
    assert "dashboard.deliver_alert[" not in worker.text()
    wait_until(lambda: silent.counts()[1] >= ROUTES, 90, "every first try to time out")
    held = sorted(silent.held)[:ROUTES]
    assert all(h < HTTP_TIMEOUT + 5 for h in held), held
    rows = api.get("/api/alert-deliveries/")
    listed = rows["results"] if isinstance(rows, dict) else rows
    assert len(listed) == ROUTES
    tried = [r for r in listed if r["attempts"] >= 1 and r["last_error"]]
    assert tried
    assert all("timed out" in r["last_error"] for r in tried), tried

    # a due quota change fires although its alerts go to the hanging receiver too; root.a
    # has no max yet: rule set seed starts a timer for a newly set max
    deployment.celery("beat")
    change = due_quota_change(api)
    wait_until(
        lambda: api.get(f"/api/quota-changes/{change['id']}/")["state"] == "fired",
        60,
        "the change to fire",
    )
    wait_until(
        lambda: (
            [r["status"] for r in api.get("/api/runs/?kind=quota_enforcement")["results"]]
            == ["done"]
        ),
        60,
        "the firing's enforcement run",
    )
    assert "dashboard.deliver_alert[" not in worker.text()
