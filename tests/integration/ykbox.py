"""ykbox, the real scheduler in one process, for the integration tests.

``../shared/tools/ykbox`` holds apache/yunikorn-core (be3bb487) built with a fake shim
and a control API (its README). :class:`Ykbox` gunzips the binary into the test's tmp
directory, starts it on a free loopback port with a queues.yaml, drives its control
API (``/_ctl/config``, ``nodes``, ``apps``, ``release``, ``restart``) and reads what
core logs on its stderr: each quota timer's deadline (``quotaPreemptionStartTime``),
each timer cleared, each quota victim.  Nothing here knows the dashboard: the tests
compare what the dashboard stored with what this reads from core.

Where the binary is: ``YKBOX_DIR`` or ``../shared/tools/ykbox`` beside the checkout.
When it is missing the tests are skipped, except with ``CI=true``: there they fail.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["CoreDeadline", "CoreVictim", "Ykbox", "queues_yaml", "ykbox_gz"]


def ykbox_gz() -> Path:
    """The gzipped binary; a skip (locally) or a failure (CI=true) when it is missing."""
    where = Path(os.environ.get("YKBOX_DIR") or ROOT.parent / "shared" / "tools" / "ykbox")
    gz = where / "ykbox.gz"
    if not gz.is_file():
        message = f"ykbox (the real scheduler) is missing: no {gz} (set YKBOX_DIR)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return gz


@dataclass(frozen=True)
class CoreDeadline:
    """A quota timer core set (or cleared: ``deadline`` None), from its log line."""

    logged_at: datetime
    queue: str
    message: str
    deadline: datetime | None


@dataclass(frozen=True)
class CoreVictim:
    logged_at: datetime
    queue: str
    allocation_key: str
    application_id: str


def _ts(text: str) -> datetime:
    # core's zap timestamps: 2026-11-28T22:29:04.907Z (millisecond precision)
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


_LINE = re.compile(r"^(\S+Z)\t(\w+)\t(\S+)\t(\S+)\t(.*?)\t(\{.*\})\s*$")


def queues_yaml(
    queues: dict[str, dict[str, Any]],
    *,
    quota_preemption: bool = True,
    parents: tuple[str, ...] = (),
) -> str:
    """A queues.yaml of partition ``default``: *queues* maps a queue under root (dotted,
    e.g. ``"parent.leaf"``) to ``{"max": {...}, "guaranteed": {...}, "delay": "3s"}``;
    the names on the way are parents."""
    tree: dict[str, Any] = {}
    for path, spec in queues.items():
        node = tree
        for part in path.split("."):
            node = node.setdefault(part, {"children": {}, "spec": None})
            last = node
            node = node["children"]
        last["spec"] = spec

    def render(name: str, node: dict[str, Any], indent: int) -> list[str]:
        pad = " " * indent
        lines = [f"{pad}- name: {name}"]
        spec = node["spec"] or {}
        if node["children"]:
            lines.append(f"{pad}  parent: true")
        if spec.get("delay"):
            lines += [f"{pad}  properties:", f"{pad}    quota.preemption.delay: {spec['delay']}"]
        res = {k: spec[k] for k in ("guaranteed", "max") if spec.get(k)}
        if res:
            lines.append(f"{pad}  resources:")
            for kind, values in res.items():
                lines.append(f"{pad}    {kind}:")
                lines += [f"{pad}      {t}: {v}" for t, v in values.items()]
        if node["children"]:
            lines.append(f"{pad}  queues:")
            for child, sub in node["children"].items():
                lines += render(child, sub, indent + 4)
        return lines

    body = [
        "partitions:",
        "  - name: default",
        "    preemption:",
        "      enabled: true",
        f"      quotapreemptionenabled: {str(quota_preemption).lower()}",
        "    queues:",
        "      - name: root",
        '        submitacl: "*"',
    ]
    if tree:
        body.append("        queues:")
        for name, node in tree.items():
            body += render(name, node, 10)
    return "\n".join(body) + "\n"


class Ykbox:
    """One ykbox process of a test; :meth:`stop` (the fixture's teardown) ends it."""

    def __init__(self, tmp: Path, config: str, *, release_delay: str = "200ms") -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        self.binary = tmp / "ykbox"
        with gzip.open(ykbox_gz()) as src, self.binary.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        self.binary.chmod(0o755)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / "ykbox.log"
        (tmp / "queues.yaml").write_text(config)
        with self.log.open("wb") as out:
            self.popen = subprocess.Popen(
                [
                    str(self.binary),
                    "-addr",
                    f"127.0.0.1:{self.port}",
                    "-config",
                    str(tmp / "queues.yaml"),
                    "-release-delay",
                    release_delay,
                    "-log-level",
                    "INFO",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if self.popen.poll() is not None:
                pytest.fail(f"ykbox exited with {self.popen.returncode}:\n{self.text()[-3000:]}")
            try:
                self.get("/ws/v1/scheduler/healthcheck")
                return
            except (OSError, ValueError):
                time.sleep(0.1)
        pytest.fail(f"ykbox did not answer in 30 s:\n{self.text()[-3000:]}")

    # -- HTTP -------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: bytes | None = None) -> Any:
        request = urllib.request.Request(f"{self.url}{path}", data=body, method=method)
        try:
            with urllib.request.urlopen(request, timeout=15) as answer:  # our own loopback
                raw = answer.read()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"ykbox {method} {path}: {e.code} {e.read()[:500]!r}") from e
        return json.loads(raw) if raw.strip() else None

    def get(self, path: str) -> Any:
        return self._call("GET", path)

    def post(self, path: str, payload: object) -> Any:
        body = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        return self._call("POST", path, body)

    # -- the cluster (control API) ----------------------------------------------------

    def config(self, yaml: str) -> datetime:
        """Apply a queues.yaml as a ConfigMap change; the time core applied it."""
        answer = self.post("/_ctl/config", yaml)
        return _ts(answer["appliedAt"])

    def nodes(self, count: int, resources: dict[str, str] | None = None) -> None:
        """*count* nodes ``node-1``... (default 4 vcore, 8Gi each)."""
        resources = resources or {"vcore": "4", "memory": "8Gi"}
        self.post("/_ctl/nodes", {"count": count, "prefix": "node-", "resources": resources})

    def app(
        self, app_id: str, queue: str, asks: int, resources: dict[str, str] | None = None
    ) -> None:
        self.post(
            "/_ctl/apps",
            {
                "id": app_id,
                "queue": queue,
                "user": "alice",
                "asks": asks,
                "resources": resources or {"vcore": "1", "memory": "1Gi"},
            },
        )

    def release(self, app_id: str, count: int) -> None:
        self.post("/_ctl/release", {"app": app_id, "count": count})

    def restart(self, downtime: str = "1s", recover_delay: str = "0s") -> Any:
        return self.post(f"/_ctl/restart?downtime={downtime}&recoverDelay={recover_delay}", "")

    def state(self) -> Any:
        return self.get("/_ctl/state")

    def bound(self) -> int:
        return int(self.state().get("podCounts", {}).get("Bound", 0))

    def queue(self, path: str) -> Any:
        return self.get(f"/ws/v1/partition/default/queue/{path}")

    def usage(self, path: str) -> dict[str, int]:
        """Core's usage of *path* (allocated, which still holds the preempting)."""
        return {k: int(v) for k, v in (self.queue(path).get("allocatedResource") or {}).items()}

    # -- core's log -------------------------------------------------------------------

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def _lines(self) -> list[tuple[datetime, str, str, dict[str, Any]]]:
        out = []
        for line in self.text().splitlines():
            m = _LINE.match(line)
            if m is None:
                continue
            try:
                fields = json.loads(m.group(6))
            except ValueError:
                continue
            out.append((_ts(m.group(1)), m.group(3), m.group(5), fields))
        return out

    def timers(self, queue: str) -> list[CoreDeadline]:
        """Every quota timer core set or cleared for *queue*, in log order."""
        found = []
        for at, _logger, message, fields in self._lines():
            if fields.get("queue") != queue:
                continue
            if "quotaPreemptionStartTime" in fields:
                deadline = _ts(fields["quotaPreemptionStartTime"])
                found.append(CoreDeadline(at, queue, message, deadline))
            elif "removed quota preemption start time" in message:
                found.append(CoreDeadline(at, queue, message, None))
        return found

    def deadline(self, queue: str) -> datetime | None:
        """The deadline core holds now for *queue* by its log (None: no timer)."""
        timers = self.timers(queue)
        return timers[-1].deadline if timers else None

    def victims(self, queue: str) -> list[CoreVictim]:
        return [
            CoreVictim(at, queue, fields["allocationKey"], fields.get("applicationID", ""))
            for at, _logger, message, fields in self._lines()
            if message == "Preempting victim for quota change preemption"
            and fields.get("queue") == queue
        ]

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
