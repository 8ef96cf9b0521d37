"""``./scripts/run`` stops everything it started: SIGTERM or SIGINT to the script leaves no
web server, Celery worker (nor its pool children) or beat running, and a worker that
dies stops the rest, with the end of its log printed; each instance's gunicorn has its
own control socket, so a second instance never takes over the first's; the address and
the demo credentials are printed once everything is up, and the worker's and beat's
logs go to their files, not among the web server's lines.

The script runs on its embedded defaults (SQLite and the SQLite broker in a private
``DASHBOARD_VAR_DIR``), so it touches neither the test database nor the shared Redis.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> dict[int, str]:
    """Every process below *pid*, with its command line."""
    tree = _children()
    out: dict[int, str] = {}
    stack = list(tree.get(pid, []))
    while stack:
        child = stack.pop()
        try:
            cmd = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        out[child] = cmd.decode(errors="replace").strip()
        stack.extend(tree.get(child, []))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(
    tmp: Path, port: int, migrated: Path | None, task_delay: float = 0.0
) -> subprocess.Popen[bytes]:
    """``scripts/run`` in *tmp* on *port*: on a fresh machine's empty folder, or with its
    SQLite database a copy of the *migrated* file (the script's own ``migrate`` then has
    nothing to do)."""
    if migrated is not None:
        (tmp / "var").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated, tmp / "var" / "db.sqlite3")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
    }
    env.update(
        DASHBOARD_VAR_DIR=str(tmp / "var"),
        CELERY_BEAT_SCHEDULE_FILENAME=str(tmp / "var" / "celerybeat-schedule"),
        HOST="127.0.0.1",
        PORT=str(port),
        DEBUG="true",
        STOP_GRACE_SECONDS="10",
        DASHBOARD_TEST_TASK_DELAY=str(task_delay),
        # the worker looks for a message on the embedded broker twice a second, not every
        # 50 ms (the script's default for quick what-ifs): the tests wait on processes
        # starting and stopping, not on a task's pick-up, and each look is a query
        DASHBOARD_BROKER_POLL_SECONDS="0.5",
    )
    log = (tmp / f"run-{port}.log").open("wb")
    # its own session: whatever happens, the test can clean up below
    return subprocess.Popen(
        ["./scripts/run"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_default_interrupts,
    )


def _default_interrupts() -> None:
    """The script starts with SIGINT and SIGQUIT at their defaults, as from a terminal.

    A test session started in the background of a non-interactive shell (``.ci/run &``)
    inherits them ignored, and a shell cannot trap a signal ignored when it started:
    the SIGINT case would then test the caller's shell, not the script.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _wait_up(proc: subprocess.Popen[bytes], port: int, tmp: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"scripts/run exited early: {(tmp / f'run-{port}.log').read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(1)
    else:
        pytest.fail(f"no web server on {port}: {(tmp / f'run-{port}.log').read_text()}")
    # worker and beat are up as well (their processes exist)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        cmds = " ".join(_descendants(proc.pid).values())
        if "worker" in cmds and "beat" in cmds:
            return
        time.sleep(1)
    pytest.fail(f"worker or beat missing: {_descendants(proc.pid)}")


def _stop_and_check(proc: subprocess.Popen[bytes], sig: int) -> dict[int, str]:
    started = _descendants(proc.pid)
    try:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            return {p: c for p, c in started.items() if _alive(p)}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(p) for p in started):
            time.sleep(0.5)
        left = {p: c for p, c in started.items() if _alive(p)}
        return left
    finally:
        for pid in list(started):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _credentials_printed(log: Path) -> str:
    """The script's output once it printed the credentials (last, once web server,
    worker and beat are up)."""
    deadline = time.monotonic() + 120
    while "Demo staff user: username=" not in (text := log.read_text()):
        assert time.monotonic() < deadline, "the script never printed the demo credentials"
        time.sleep(0.5)
    return text


def _worker_log(log: Path, port: int) -> Path:
    """The worker's log file of the instance whose output is *log*."""
    return log.parent / "var" / f"worker-{port}.log"


def _busy_worker(port: int, log: Path) -> None:
    """Queue a round as the demo staff user; wait until the worker is inside it (the
    run sleeps DASHBOARD_TEST_TASK_DELAY seconds)."""
    text = _credentials_printed(log)
    creds = text.split("Demo staff user: username=", 1)[1].split()
    username, password = creds[0], creds[1].removeprefix("password=")
    base = f"http://127.0.0.1:{port}/api"

    def call(path: str, body: dict[str, object] | None, token: str = "") -> object:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(base + path, data=data)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Token {token}")
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())

    token = call("/auth/token/", {"username": username, "password": password})
    assert isinstance(token, dict)
    snapshots = call("/snapshots/", None, token["token"])
    assert isinstance(snapshots, dict)
    call("/rounds/", {"snapshot": snapshots["results"][0]["id"]}, token["token"])
    deadline = time.monotonic() + 120
    while "DASHBOARD_TEST_TASK_DELAY: run" not in _worker_log(log, port).read_text():
        assert time.monotonic() < deadline, "the worker never started the queued round"
        time.sleep(0.5)


def _assert_address_and_credentials_after_start_up(log: Path, port: int) -> None:
    """The address and the demo credentials come after the web server answered, the
    credentials right after the address, the log files' names right before it; the
    worker's and beat's lines are in their files (the worker in a task by now), none
    among the script's own."""
    text = log.read_text()
    lines = text.splitlines()
    address = next(i for i, line in enumerate(lines) if line.startswith("Dashboard: "))
    assert lines[address].startswith(f"Dashboard: http://127.0.0.1:{port}/"), lines[address]
    assert lines[address + 1].startswith("Demo staff user: username="), lines[address + 1]
    var = log.parent / "var"
    assert lines[address - 1] == (
        f"Worker log: {var}/worker-{port}.log   beat log: {var}/beat-{port}.log"
    ), lines[address - 1]
    assert '"GET /login/ HTTP/1.1" 200' in "\n".join(lines[:address]), text
    worker = _worker_log(log, port).read_text()
    assert " ready." in worker, worker  # the worker's "celery@host ready."
    beat = (var / f"beat-{port}.log").read_text()
    assert "beat: Starting..." in beat, beat
    for line in ("celery@", "beat: Starting...", "Task dashboard.", "DASHBOARD_TEST_TASK_DELAY"):
        assert line not in text, text


def _worker_exit_stops_the_rest(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """The worker killed: the script says so, prints the end of the worker's log, stops
    web server and beat, and exits with 1."""
    _credentials_printed(log)
    started = _descendants(proc.pid)
    workers = [
        pid
        for pid in _children().get(proc.pid, [])
        if "worker" in started.get(pid, "")
        and "celery" in started.get(pid, "")
        and "deliveries" not in started.get(pid, "")  # the deliveries worker: its own queue
    ]
    assert len(workers) == 1, started
    os.kill(workers[0], signal.SIGKILL)
    assert proc.wait(timeout=90) == 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.5)
    assert {p: c for p, c in started.items() if _alive(p)} == {}
    text = log.read_text()
    worker_log = _worker_log(log, port)
    heading = f"the last lines of {worker_log}:\n"
    assert f"the worker stopped (exit {128 + signal.SIGKILL})\n{heading}" in text, text
    tail = worker_log.read_text().splitlines(keepends=True)[-20:]
    assert text.split(heading, 1)[1].startswith("".join(tail)), text


def _stop_busy_and_check(proc: subprocess.Popen[bytes], port: int, log: Path, sig: int) -> None:
    """With the worker in the middle of a long task (a warm shutdown would wait for it),
    *sig* to the script stops every child: the script stops the worker's whole process
    group after its grace period."""
    _busy_worker(port, log)
    _assert_address_and_credentials_after_start_up(log, port)
    started = _descendants(proc.pid)
    print(f"[figures] scripts/run children before {signal.Signals(sig).name}: {len(started)}")
    assert any("celery" in c and "worker" in c for c in started.values()), started
    assert any("gunicorn" in c for c in started.values()), started
    t0 = time.monotonic()

    left = _stop_and_check(proc, sig)

    took = time.monotonic() - t0
    print(f"[figures] scripts/run stopped by {signal.Signals(sig).name} in {took:.1f} s")
    assert left == {}, f"still running after the script stopped: {left}"


def test_sigterm_to_the_run_script_stops_every_child(tmp_path: Path) -> None:
    """Started as on a fresh machine (the script migrates an empty database)."""
    port = free_port()
    proc = _start(tmp_path, port, None, task_delay=900)
    _wait_up(proc, port, tmp_path)
    _stop_busy_and_check(proc, port, tmp_path / f"run-{port}.log", signal.SIGTERM)


def test_each_instance_has_its_own_gunicorn_control_socket_and_sigint_stops_every_child(
    tmp_path: Path, migrated_sqlite: Path
) -> None:
    """Two instances, each from a migrated copy: each gunicorn has its own control socket;
    then SIGINT to the first script (its worker busy) stops every child of it, and the
    second's worker killed stops the rest of the second."""
    ports = [free_port(), free_port()]
    procs = []
    try:
        for i, port in enumerate(ports):
            (tmp_path / str(i)).mkdir()
            procs.append(_start(tmp_path / str(i), port, migrated_sqlite, task_delay=900))
        for i, (proc, port) in enumerate(zip(procs, ports, strict=True)):
            _wait_up(proc, port, tmp_path / str(i))
        sockets = []
        for proc in procs:
            masters = [c for c in _descendants(proc.pid).values() if "gunicorn" in c]
            flags = {
                c.split("--control-socket ", 1)[1].split()[0]
                for c in masters
                if "--control-socket " in c
            }
            assert len(flags) == 1, masters
            sockets.append(flags.pop())
        assert sockets[0] != sockets[1]
        for path in sockets:
            assert not path.startswith(str(Path.home())), path
        _stop_busy_and_check(
            procs[0], ports[0], tmp_path / "0" / f"run-{ports[0]}.log", signal.SIGINT
        )
        _worker_exit_stops_the_rest(procs[1], ports[1], tmp_path / "1" / f"run-{ports[1]}.log")
    finally:
        for proc in procs:
            if proc.poll() is None:
                _stop_and_check(proc, signal.SIGTERM)
